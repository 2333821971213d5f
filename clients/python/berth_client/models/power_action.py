from enum import StrEnum


class PowerAction(StrEnum):
    DOWN = "down"
    DOWN_FORCE = "down_force"
    UP = "up"

    def __str__(self) -> str:
        return str(self.value)
