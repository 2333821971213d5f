from enum import StrEnum


class GpuFaultKind(StrEnum):
    LOST = "lost"
    STUCK = "stuck"
    XID = "xid"

    def __str__(self) -> str:
        return str(self.value)
