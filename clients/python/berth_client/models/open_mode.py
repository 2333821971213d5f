from enum import StrEnum


class OpenMode(StrEnum):
    APPEND = "append"
    TRUNCATE = "truncate"

    def __str__(self) -> str:
        return str(self.value)
