"""LiveIndexProvider: serves the version CURRENT names, reloads when CURRENT moves (an ingest, a
rollback) without a restart, keeps a held version answering, and refuses a corrupt version (naming the
file) or a mismatched one (naming the setting and `rebuild`) with one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, NoIndexError
from hybrid_rag.indices.live import IndexConfig, LiveIndexProvider
from hybrid_rag.settings import Settings


@pytest.fixture
def ingested(engine: Engine, corpus: Path) -> Engine:
    engine.ingest([corpus])
    return engine


def _provider(engine: Engine) -> LiveIndexProvider:
    """A second provider on the same data dir, as another process (a server) would hold."""
    return LiveIndexProvider(IndexConfig.of(engine.settings), engine.embedder)


def test_no_version_yet_is_a_no_index_error(engine: Engine) -> None:
    with pytest.raises(NoIndexError, match="hybrid-rag ingest"):
        _provider(engine).get()


def test_the_same_version_is_loaded_once(ingested: Engine) -> None:
    provider = _provider(ingested)
    first = provider.get()
    assert provider.get() is first and provider.loaded_versions() == [first.version]
    assert first.count == ingested.store.chunk_count() == len(first.bm25)


def test_a_new_version_is_picked_up_on_the_next_get_and_a_held_one_keeps_answering(
    ingested: Engine, corpus: Path
) -> None:
    provider = _provider(ingested)
    held = provider.get()
    (corpus / "docs" / "more.md").write_text("# Birds\n\nSwallows migrate south in autumn.\n")
    ingested.ingest([corpus])
    live = provider.get()
    assert live.version == held.version + 1 and live.count > held.count
    vector = ingested.embedder.embed_queries(["soil"])[0]
    assert held.dense.search(vector, 3, None)  # the version a query started with still answers
    assert held.bm25.search("soil", 3, None)


def test_a_rollback_moves_current_and_the_provider_follows(ingested: Engine, corpus: Path) -> None:
    provider = _provider(ingested)
    first = provider.get().version
    (corpus / "docs" / "more.md").write_text("# Birds\n\nSwallows migrate south in autumn.\n")
    ingested.ingest([corpus])
    assert provider.get().version == first + 1
    ingested.rollback(first)
    assert provider.get().version == first and ingested.retriever.query("soil").index_version == first
    with pytest.raises(NoIndexError, match=r"index version 99 is not on disk \(on disk: v1, v2\)"):
        ingested.rollback(99)


def test_a_truncated_index_file_is_a_clear_error_naming_the_file(ingested: Engine) -> None:
    provider = _provider(ingested)
    version = provider.versions.current()
    directory = provider.versions.directory(version)
    victim = max(
        (p for p in directory.rglob("*") if p.is_file() and p.name != "manifest.json"),
        key=lambda p: p.stat().st_size,
    )
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(CorruptIndexError, match="fails its checksum") as error:
        provider.get()
    assert str(victim) in str(error.value)
    assert "hybrid-rag rebuild" in str(error.value)  # the message says how to recover


def test_a_version_built_with_other_settings_is_a_mismatch_not_a_wrong_answer(
    ingested: Engine, settings: Settings
) -> None:
    other = settings.with_overrides({"index.dense_scoring": "pooled"})
    provider = LiveIndexProvider(IndexConfig.of(other), ingested.embedder)
    with pytest.raises(IndexMismatchError, match="index.dense_scoring 'maxp'.*'pooled'.*rebuild"):
        provider.get()


def test_a_manifest_whose_counts_disagree_with_the_files_is_refused(ingested: Engine) -> None:
    provider = _provider(ingested)
    version = provider.versions.current()
    path = provider.versions.directory(version) / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["chunks"] = int(manifest["chunks"]) + 1
    path.write_text(json.dumps(manifest))
    with pytest.raises((IndexMismatchError, CorruptIndexError), match="rebuild"):
        provider.get()
