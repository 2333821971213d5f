from enum import StrEnum


class PreemptMode(StrEnum):
    CANCEL = "CANCEL"
    REQUEUE = "REQUEUE"

    def __str__(self) -> str:
        return str(self.value)
