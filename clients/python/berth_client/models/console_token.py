from enum import StrEnum


class ConsoleToken(StrEnum):
    ACCESS_TOKEN = "access_token"
    ID_TOKEN = "id_token"

    def __str__(self) -> str:
        return str(self.value)
