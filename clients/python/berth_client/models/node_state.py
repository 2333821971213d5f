from enum import StrEnum


class NodeState(StrEnum):
    ALLOCATED = "ALLOCATED"
    DOWN = "DOWN"
    DRAINED = "DRAINED"
    DRAINING = "DRAINING"
    IDLE = "IDLE"
    MIXED = "MIXED"
    POWERED_DOWN = "POWERED_DOWN"
    POWERING_DOWN = "POWERING_DOWN"
    POWERING_UP = "POWERING_UP"

    def __str__(self) -> str:
        return str(self.value)
