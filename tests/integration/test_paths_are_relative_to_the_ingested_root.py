"""One rule for paths in every output (hybrid_rag/paths.py): relative to the ingested root (the
folder holding every stored document), the same in `query`, `context`, `ask`, their `--json` and
the engine's answers; `--absolute-paths` shows the stored paths."""

import json

import pytest

from hybrid_rag.paths import display_path, ingested_root

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(cli, tmp_path, monkeypatch, corpus):
    """The shared ``cli`` (tests/conftest.py) after an ingest of the corpus."""
    monkeypatch.chdir(tmp_path)  # not the corpus: nothing may depend on the working directory
    assert cli("ingest", str(corpus)) == 0
    return cli


QUESTION = "compost drainage clay soil"


def test_query_context_and_ask_cite_the_same_relative_paths(cli, capsys):
    capsys.readouterr()
    assert cli("query", QUESTION, "--json") == 0
    query_paths = {r["path"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert "docs/garden.md" in query_paths
    assert cli("query", QUESTION) == 0
    assert "docs/garden.md:" in capsys.readouterr().out

    assert cli("context", QUESTION, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert {q["path"] for q in data["quotes"]} <= query_paths
    assert all(s["ref"].startswith(("docs/", "src/")) for s in data["sources"])
    assert cli("context", QUESTION) == 0
    rendered = capsys.readouterr().out
    assert "docs/garden.md:" in rendered and "/corpus/" not in rendered

    assert cli("ask", QUESTION) == 0
    asked = capsys.readouterr().out
    assert "docs/garden.md:" in asked and "/corpus/" not in asked


def test_absolute_paths_flag_shows_the_stored_paths(cli, corpus, capsys):
    capsys.readouterr()
    assert cli("context", QUESTION, "--json", "--absolute-paths") == 0
    paths = {q["path"] for q in json.loads(capsys.readouterr().out)["quotes"]}
    assert str(corpus / "docs" / "garden.md") in paths


def test_engine_answers_follow_the_rule(tmp_path, corpus, engine):
    engine.ingest([corpus])
    assert engine.ingested_root() == str(corpus)
    result = engine.query(QUESTION)
    assert {c.path for c in result.chunks} <= {"docs/garden.md", "src/geometry.py"}
    raw = engine.query(QUESTION, absolute_paths=True)
    assert all(c.path.startswith(str(corpus)) for c in raw.chunks)


@pytest.mark.parametrize(
    ("first", "last", "root"),
    [
        ("/r/docs/a.md", "/r/src/b.py", "/r"),
        ("/r/docs/a.md", "/r/docs/b.md", "/r/docs"),
        ("/r/docs/a.md", "/r/docs/a.md", "/r/docs"),
        ("/r/doc/a.md", "/r/docs/b.md", "/r"),  # a common prefix that is not a whole folder name
        ("MED-1", "MED-9", None),  # an imported or dataset id: shown as stored
        (None, None, None),
    ],
)
def test_the_ingested_root_is_the_folder_holding_every_path(first, last, root):
    assert ingested_root(first, last) == root


def test_a_path_outside_the_root_is_shown_as_stored():
    assert display_path("/r/docs/a.md", "/r") == "docs/a.md"
    assert display_path("/rx/a.md", "/r") == "/rx/a.md"
    assert display_path("MED-1", "/r") == "MED-1"
