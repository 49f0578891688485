"""Custom metadata is kept and filterable as ``meta.<key>``: from Markdown front matter and from
``ingest(..., metadata=...)``; numbers compare as numbers, ISO dates as dates, lists by element;
a missing or unknown key matches nothing; the filter runs in SQL before the search."""

from __future__ import annotations

import sqlite3

import pytest
from engine_fixtures import engine_over, write_tree
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.filters import parse_filter
from hybrid_rag.ingest.metadata import front_matter

DOCS = {
    "guide.md": "---\ntype: documentation\ndate: 2024-07-15\nversion: 3\ntags: [install, linux]\n---\n"
    "# Install guide\n\nInstall the engine on linux with pip.\n",
    "notes.md": "---\ntype: notes\ndate: 2023-12-01\nversion: 12\ntags: [draft]\n---\n"
    "# Meeting notes\n\nWe talked about the install and the engine.\n",
    "plain.md": "# Plain\n\nNo front matter here; the engine install is elsewhere.\n",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """One ingest for the tests that only read it (``fresh``: for a test that ingests again)."""
    with engine_over(write_tree(tmp_path_factory.mktemp("meta") / "docs", DOCS)) as eng:
        yield eng


@pytest.fixture
def fresh(tmp_path):
    with engine_over(write_tree(tmp_path / "docs", DOCS)) as eng:
        yield eng


def names(engine: Engine, text: str) -> set[str]:
    ids = engine.store.chunk_ids_matching(parse_filter(text))
    return {c.path.rsplit("/", 1)[-1] for c in engine.store.chunks(ids).values()}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("meta.type = documentation", {"guide.md"}),
        ("meta.type != documentation", {"notes.md"}),  # plain.md has no type: not even != matches
        ("meta.type in (notes, documentation)", {"guide.md", "notes.md"}),
        ("meta.type not in (notes)", {"guide.md"}),
        ("meta.date > 2024-06-01", {"guide.md"}),
        ("meta.date <= 2023-12-01", {"notes.md"}),
        ("meta.date = 2024-07-15", {"guide.md"}),
        ("meta.version > 5", {"notes.md"}),  # 12 > 5 as numbers ("12" < "5" as text)
        ("meta.version = 3", {"guide.md"}),
        ("meta.tags = draft", {"notes.md"}),
        ("meta.tags in (linux, nothing)", {"guide.md"}),
        ("meta.type ~ doc*", {"guide.md"}),
        ("meta.nope = x", set()),
        ("meta.nope != x", set()),
        ("meta.type=documentation and meta.date>2024-06-01", {"guide.md"}),
        ("not meta.type = notes", {"guide.md", "plain.md"}),
    ],
)
def test_meta_filters(engine: Engine, expr: str, expected: set[str]) -> None:
    assert names(engine, expr) == expected


def test_api_metadata_goes_over_front_matter_and_a_change_rewrites_the_document(
    fresh: Engine, tmp_path
) -> None:
    engine, docs = fresh, tmp_path / "docs"
    report = engine.ingest([docs], metadata={"team": "search", "type": "manual"})
    assert report.plan.changed and not report.plan.added
    assert names(engine, "meta.team = search") == {"guide.md", "notes.md", "plain.md"}
    assert names(engine, "meta.type = manual") == {"guide.md", "notes.md", "plain.md"}
    again = engine.ingest([docs], metadata={"team": "search", "type": "manual"})
    assert not again.plan.has_changes


def test_query_with_a_meta_filter_keeps_k_results(engine: Engine) -> None:
    result = engine.query("install the engine", top_k=1, filters="meta.type = notes")
    assert [c.path.rsplit("/", 1)[-1] for c in result.chunks] == ["notes.md"]
    assert result.chunks[0].chunk.meta["type"] == "notes"
    assert result.to_dict()["results"][0]["meta"]["tags"] == ["draft"]


def test_front_matter_edge_cases() -> None:
    assert front_matter("no front matter") == {}
    assert front_matter("---\n- a list\n---\n") == {}
    assert front_matter("---\nbroken: [\n---\n") == {}
    assert front_matter("---\n---\ntext") == {}
    assert front_matter("---\nwhen: 2024-01-02T03:04:05\n...\n") == {"when": "2024-01-02T03:04:05"}


def test_meta_keys_keep_their_case_and_need_a_key() -> None:
    assert str(parse_filter("META.Author = x")) == "meta.Author = x"
    with pytest.raises(InputError, match="unknown filter field"):
        parse_filter("meta = x")


def test_a_schema_1_store_is_migrated_in_place(tmp_path) -> None:
    settings = fake_settings(tmp_path / "data")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nsome text about soil\n")
    engine = Engine(settings)
    engine.ingest([docs])
    engine.close()
    db = sqlite3.connect(settings.store_path)
    for table in ("documents", "chunks"):
        db.execute(f"ALTER TABLE {table} DROP COLUMN meta")
    db.execute("ALTER TABLE chunks DROP COLUMN duplicate_of")  # schema 5's
    db.execute("ALTER TABLE documents DROP COLUMN created")
    db.execute("DROP INDEX ix_chunks_lang")  # schema 6's chunk languages
    db.execute("ALTER TABLE chunks DROP COLUMN lang")
    db.execute("ALTER TABLE embeddings DROP COLUMN checksum")  # schema 4's
    db.execute("DROP INDEX ix_documents_live_path")  # schema 3's snapshots
    db.execute("DROP INDEX ix_documents_retired")
    db.execute("ALTER TABLE documents DROP COLUMN retired")
    db.execute("DELETE FROM meta WHERE key = 'generation'")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    engine = Engine(settings)
    assert engine.query("soil").chunks  # opened, migrated, nothing lost
    assert engine.store.counts()["chunks"] == 1
    engine.close()
