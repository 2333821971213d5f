from enum import StrEnum


class LaunchFault(StrEnum):
    JOB = "job"
    NODE = "node"
    USER = "user"

    def __str__(self) -> str:
        return str(self.value)
