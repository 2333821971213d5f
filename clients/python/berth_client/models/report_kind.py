from enum import StrEnum


class ReportKind(StrEnum):
    EXITED = "exited"
    LAUNCH_FAILED = "launch_failed"
    STARTED = "started"

    def __str__(self) -> str:
        return str(self.value)
