from enum import StrEnum


class ReportSource(StrEnum):
    JOB_REPORT = "job_report"
    STEP_REPORT = "step_report"
    TIME_LIMIT = "time_limit"

    def __str__(self) -> str:
        return str(self.value)
