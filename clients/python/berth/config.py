"""Which cluster the client talks to, found as the ``berth`` CLI finds it (cli/src/config.rs):
``BERTH_URL`` and ``BERTH_TOKEN``, else the CLI's client configuration file for whichever
is missing: ``$BERTH_CLIENT_CONFIG``, else ``<config dir>/berth/config.toml``
(``$XDG_CONFIG_HOME/berth/config.toml`` or ``~/.config/berth/config.toml`` on Linux), the
file ``berth dev`` writes (``url = "…"``, ``token = "…"``). ``BERTH_CA_FILE`` names a PEM
file of CA certificates to trust besides the system's, as for the CLI.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError


@dataclass(frozen=True)
class Target:
    """A cluster: the api's base URL and a bearer token (never shown by ``repr``)."""

    url: str
    token: str
    ca_file: str | None = None

    def __repr__(self) -> str:
        return f"Target(url={self.url!r}, token='***', ca_file={self.ca_file!r})"


def config_dir() -> Path | None:
    """The platform's configuration directory, as the CLI's ``dirs::config_dir()`` finds it."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else None
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    home = os.environ.get("HOME") or str(Path.home())
    return Path(home) / ".config" if home else None


def client_config_path() -> Path | None:
    """The CLI's client configuration file: ``$BERTH_CLIENT_CONFIG``, else
    ``<config dir>/berth/config.toml``."""
    named = os.environ.get("BERTH_CLIENT_CONFIG")
    if named:
        return Path(named)
    base = config_dir()
    return base / "berth" / "config.toml" if base else None


def read_client_config(path: Path) -> dict[str, str]:
    """The file's ``url`` and ``token`` (those present); a missing file reads as empty."""
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"reading {path}: {e}") from e
    out: dict[str, str] = {}
    for key in ("url", "token"):
        value = document.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigError(f"reading {path}: {key} must be a string")
        out[key] = value
    return out


def resolve_target(url: str | None = None, token: str | None = None) -> Target:
    """The cluster from the arguments, else ``BERTH_URL``/``BERTH_TOKEN``, else the CLI's
    configuration file for whichever is still missing.

    Raises:
        ConfigError: when no URL or no token is found, or the file cannot be read.
    """
    url = url or os.environ.get("BERTH_URL") or None
    token = token or os.environ.get("BERTH_TOKEN") or None
    path = client_config_path()
    if not (url and token) and path is not None:
        file = read_client_config(path)
        url = url or file.get("url") or None
        token = token or file.get("token") or None
    where = f" (nor does {path})" if path is not None else ""
    if not url:
        raise ConfigError(f"no cluster configured: set BERTH_URL and BERTH_TOKEN, or run `berth dev`{where}")
    if not token:
        raise ConfigError(f"no token configured: set BERTH_TOKEN{where}")
    return Target(url=url, token=token, ca_file=os.environ.get("BERTH_CA_FILE") or None)
