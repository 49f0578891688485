"""The engine most test modules ask their questions of: their own files, written once, ingested by
an Engine with the deterministic fake embedder (``fake_settings``), closed after. A module-scoped
``engine`` fixture that differs from another only in its data is three lines:

    @pytest.fixture(scope="module")
    def engine(tmp_path_factory):
        with engine_over(write_tree(tmp_path_factory.mktemp("notes") / "docs", NOTES)) as eng:
            yield eng

``make_settings(tmp, retrieval__path_priors=[])`` is ``fake_settings`` with the data dir in ``tmp``
and its overrides as keywords (``__`` for each dot, as the ``HYBRID_RAG_`` variables spell them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import Settings


def make_settings(tmp: Path, **over: Any) -> Settings:
    """The fake embedder's settings with the data dir ``tmp/data``; ``over`` as dotted overrides
    (``ingest__batch_chunks=8`` is ``ingest.batch_chunks: 8``)."""
    return fake_settings(tmp / "data", {key.replace("__", "."): value for key, value in over.items()})


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """``files`` (relative path -> text or bytes) written below ``root`` (made); ``root``."""
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")
    return root


@contextmanager
def engine_over(
    *folders: Path,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    ingest: Mapping[str, Any] | None = None,
    **over: Any,
) -> Iterator[Engine]:
    """An Engine over ``folders``, ingested (``ingest``: keywords of ``Engine.ingest``, such as
    ``metadata``), closed on leaving. Its settings: ``settings``, else :func:`make_settings` with
    the data dir beside the first folder and ``over``; ``embedder`` instead of the settings' one."""
    if not folders:
        raise ValueError("engine_over needs at least one folder to ingest")
    settings = settings if settings is not None else make_settings(folders[0].parent, **over)
    with Engine(settings, embedder=embedder) as engine:
        engine.ingest(list(folders), **dict(ingest or {}))
        yield engine
