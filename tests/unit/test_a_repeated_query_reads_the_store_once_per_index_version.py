"""Per-query store reads that do not change between index versions are made once per version
(RESULTS.md#beside-the-frameworks: they dominated a small index's latency): the ingested root that paths
are shown relative to, and the PRF pool's BM25 terms. A new version (another ingest) reads
them again, so what they show follows the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.engine import Engine

QUESTION = "compost drainage clay soil"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> dict[str, int]:
    calls = {"path_bounds": 0, "cached_tokens": 0}
    for name in calls:
        real = getattr(engine.store, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(engine.store, name, counting)
    return calls


def test_the_ingested_root_is_read_once_per_index_version(
    engine: Engine, corpus: Path, tmp_path: Path, counted: dict[str, int]
) -> None:
    engine.ingest([corpus])
    counted["path_bounds"] = 0
    first = [engine.query(QUESTION) for _ in range(3)]
    assert counted["path_bounds"] == 1
    assert {c.path for r in first for c in r.chunks} <= {"docs/garden.md", "src/geometry.py"}
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "notes.md").write_text("# Clay\n\nClay soil drains slowly; compost opens it up.\n")
    engine.ingest([other])  # a new version, and a root above both folders
    after = engine.query(QUESTION)
    assert counted["path_bounds"] == 2
    assert engine.ingested_root() == str(tmp_path)
    assert any(c.path.startswith("corpus/") for c in after.chunks)


def test_the_prf_pool_terms_are_read_once_per_index_version(
    engine: Engine, corpus: Path, counted: dict[str, int]
) -> None:
    engine.ingest([corpus])
    counted["cached_tokens"] = 0
    results = [engine.query(QUESTION, mode="hybrid") for _ in range(3)]
    assert counted["cached_tokens"] >= 1
    reads = counted["cached_tokens"]
    engine.query(QUESTION, mode="hybrid")
    assert counted["cached_tokens"] == reads  # the same pool: nothing read again
    assert results[0].chunks == results[2].chunks
