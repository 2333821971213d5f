from enum import StrEnum


class SignalTarget(StrEnum):
    BATCH = "batch"
    FULL = "full"
    STEP = "step"
    STEPS = "steps"

    def __str__(self) -> str:
        return str(self.value)
