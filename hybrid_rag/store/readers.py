"""How a data dir names itself to a store that several data dirs (hosts) may share: its host and
its index folder. The name keys the oldest state its versions read (``meta`` ``reader:<name>``) and
its rows of the version history (``index_versions.host``), so each host's `stats`, `versions` and
rollbacks read its own history, never another host's."""

from __future__ import annotations

import socket
from pathlib import Path


def reader_name(directory: Path) -> str:
    """A data dir's name in a shared store: ``<host>:<its index folder, resolved>``."""
    return f"{socket.gethostname()}:{Path(directory).resolve()}"
