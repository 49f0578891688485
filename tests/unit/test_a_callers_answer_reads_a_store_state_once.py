"""A store state's rows never change, so ``callers``/``callees``/``refs`` keep what they read for
the served state (``symbols/state_cache.py``): the same question again runs no SQL, a new ingest
(a new state) is read afresh, and the answers stay the same as uncached ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from context_cases import ingested

from hybrid_rag.symbols import state_cache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references" / "python"
READS = ("references", "symbols", "symbols_of")


@pytest.fixture
def engine(tmp_path: Path):
    root = tmp_path / "python"
    shutil.copytree(FIXTURES, root)
    engine = ingested(tmp_path, root)
    yield engine, root
    engine.close()


def counting(engine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    for name in READS:
        real = getattr(engine.store, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(engine.store, name, counted)
    return calls


def test_the_same_question_again_reads_nothing(engine, monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _ = engine
    calls = counting(engine, monkeypatch)
    first = engine.references("callers", "parse_filter")
    engine.references("refs", "parse_filter")
    assert calls
    calls.clear()
    assert engine.references("callers", "parse_filter") == first
    assert engine.references("callees", "run") == engine.references("callees", "run")
    calls.clear()
    engine.references("callers", "parse_filter")
    engine.references("refs", "parse_filter")
    assert calls == []


def test_a_new_ingest_is_read_afresh(engine) -> None:
    engine, root = engine
    assert [c["citation"] for c in engine.references("callers", "parse_filter")["callers"]] == [
        "pkg/app.py:6-9"
    ]
    app = root / "pkg" / "app.py"
    app.write_text(
        app.read_text().replace("    return parse_filter(", "    return list(")
        + "\n\ndef again(q):\n    return parse_filter(q)\n"
    )
    engine.ingest([root])
    found = [c["citation"] for c in engine.references("callers", "parse_filter")["callers"]]
    assert found == ["pkg/app.py:16-17"]


def test_the_current_state_is_never_kept() -> None:
    assert state_cache.for_state(object(), None) is None


def test_a_closed_engine_leaves_no_cache_behind(tmp_path: Path) -> None:
    import gc

    root = tmp_path / "python"
    shutil.copytree(FIXTURES, root)
    engine = ingested(tmp_path, root)
    engine.references("callers", "parse_filter")
    before = len(state_cache._CACHES)
    engine.close()
    del engine
    gc.collect()
    assert len(state_cache._CACHES) < before
