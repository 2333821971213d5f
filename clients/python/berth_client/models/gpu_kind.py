from enum import StrEnum


class GpuKind(StrEnum):
    GPU = "gpu"
    MIG = "mig"
    SHARD = "shard"

    def __str__(self) -> str:
        return str(self.value)
