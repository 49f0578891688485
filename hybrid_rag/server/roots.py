"""Server-side paths confined to ``server.ingest_roots``: each path is resolved (``..`` collapsed,
symbolic links followed) before it is compared, so neither can lead out of a root. Inside a root
the folder walk follows no symbolic links (``ingest/loaders.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hybrid_rag.server.errors import ApiError


def resolved_roots(roots: Sequence[str]) -> tuple[Path, ...]:
    return tuple(Path(r).expanduser().resolve() for r in roots)


def confine(raw: str, roots: Sequence[Path], *, field: str = "paths", data_dir: Path | None = None) -> Path:
    """``raw`` resolved, when it exists below one of ``roots`` (a relative path is taken below the
    first root); ApiError 403 when it leads outside them or there are none, or into ``data_dir``
    (the store, the indices, the API keys: never ingested), 404 when it is missing."""
    if not roots:
        raise ApiError(
            403,
            "server-side ingest is off: set server.ingest_roots to the folders it may read",
            field=field,
            kind="forbidden",
        )
    if "\x00" in raw or not raw.strip():
        raise ApiError(422, f"{field}: {raw!r} is not a path", field=field)
    path = Path(raw).expanduser()
    candidate = path if path.is_absolute() else roots[0] / path
    resolved = candidate.resolve()  # strict=False: a missing path is judged by where it would be
    if not any(resolved == root or resolved.is_relative_to(root) for root in roots):
        shown = ", ".join(str(r) for r in roots)
        raise ApiError(
            403, f"{field}: {raw!r} is outside server.ingest_roots ({shown})", field=field, kind="forbidden"
        )
    home = Path(data_dir).resolve() if data_dir is not None else None
    if home is not None and (resolved == home or resolved.is_relative_to(home)):
        raise ApiError(
            403,
            f"{field}: {raw!r} is in the data dir, which is never ingested",
            field=field,
            kind="forbidden",
        )
    if not resolved.exists():
        raise ApiError(404, f"{field}: {raw!r} does not exist", field=field, kind="not_found")
    return resolved
