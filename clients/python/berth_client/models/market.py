from enum import StrEnum


class Market(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"

    def __str__(self) -> str:
        return str(self.value)
