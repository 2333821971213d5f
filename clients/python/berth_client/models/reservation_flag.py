from enum import StrEnum


class ReservationFlag(StrEnum):
    DAILY = "DAILY"
    FLEX = "FLEX"
    IGNORE_JOBS = "IGNORE_JOBS"
    MAINT = "MAINT"
    WEEKLY = "WEEKLY"

    def __str__(self) -> str:
        return str(self.value)
