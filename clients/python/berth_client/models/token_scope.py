from enum import StrEnum


class TokenScope(StrEnum):
    ADMIN = "admin"
    READ_ONLY = "read-only"
    SUBMIT = "submit"

    def __str__(self) -> str:
        return str(self.value)
