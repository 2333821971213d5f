from enum import StrEnum


class UserRole(StrEnum):
    ADMIN = "admin"
    OPERATOR = "operator"
    USER = "user"

    def __str__(self) -> str:
        return str(self.value)
