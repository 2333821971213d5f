from enum import StrEnum


class ProviderKind(StrEnum):
    EC2 = "ec2"
    LOCAL = "local"

    def __str__(self) -> str:
        return str(self.value)
