"""`hybrid-rag documents` lists what the store holds (collection, chunk count); `delete` removes
documents by the path `documents` shows, a stored path or a folder, and publishes a version."""

import json

import pytest

pytestmark = pytest.mark.integration


def test_documents_lists_paths_collections_and_chunk_counts(cli, corpus, capsys):
    assert cli("ingest", str(corpus / "docs"), "--collection", "notes") == 0
    assert cli("ingest", str(corpus / "src"), "--collection", "code") == 0
    capsys.readouterr()
    assert cli("documents", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root"] == str(corpus)
    rows = {r["path"]: r for r in data["documents"]}
    assert set(rows) == {"docs/garden.md", "src/geometry.py"}
    assert rows["docs/garden.md"]["collection"] == "notes"
    assert all(r["chunks"] >= 1 for r in rows.values())

    assert cli("documents", "--collection", "code") == 0
    out = capsys.readouterr().out
    assert "src/geometry.py" in out and "garden.md" not in out
    assert cli("documents", "--absolute-paths", "--json") == 0
    paths = [r["path"] for r in json.loads(capsys.readouterr().out)["documents"]]
    assert str(corpus / "src" / "geometry.py") in paths


def test_documents_before_any_ingest_is_an_empty_list_naming_the_data_dir(cli, tmp_path, capsys):
    # it exited 1 (undocumented) where `documents --json` and `versions` exit 0: an empty list is no error
    home = str((tmp_path / "home").resolve())
    assert cli("documents") == 0
    out, err = capsys.readouterr()
    assert out == f"no documents in {home}: run `hybrid-rag ingest PATH`\n" and err == ""
    assert cli("documents", "--json") == 0
    assert json.loads(capsys.readouterr().out)["documents"] == []
    assert cli("versions") == 0  # the same convention
    assert home in capsys.readouterr().out


def test_documents_of_a_collection_with_none_says_so_and_exits_0(cli, corpus, tmp_path, capsys):
    assert cli("ingest", str(corpus), "--collection", "notes") == 0
    capsys.readouterr()
    assert cli("documents", "--collection", "nope") == 0
    home = str((tmp_path / "home").resolve())
    assert capsys.readouterr().out.startswith(f"no documents in collection 'nope' in {home}:")


def test_delete_by_the_shown_path_publishes_a_version_without_it(cli, corpus, capsys):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    assert cli("delete", "docs/garden.md") == 0
    assert "index version 2 live" in capsys.readouterr().out
    assert cli("query", "compost drainage clay soil", "--json", "--absolute-paths") in (0, 1)
    results = json.loads(capsys.readouterr().out)["results"]
    assert all(not r["path"].endswith("garden.md") for r in results)


def test_delete_a_folder_removes_every_document_below_it(cli, corpus, capsys):
    assert cli("ingest", str(corpus)) == 0
    assert cli("delete", str(corpus / "src")) == 0
    capsys.readouterr()
    assert cli("documents", "--json", "--absolute-paths") == 0
    paths = [r["path"] for r in json.loads(capsys.readouterr().out)["documents"]]
    assert paths == [str(corpus / "docs" / "garden.md")]


def test_delete_of_an_unknown_path_is_one_line_and_deletes_nothing(cli, corpus, tmp_path, capsys):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    assert cli("delete", "docs/garden.md", "nope.md") == 2
    err = capsys.readouterr().err
    assert "nope.md" in err and "Traceback" not in err
    assert str((tmp_path / "home").resolve()) in err  # the data dir it looked in
    assert cli("documents", "--json") == 0
    assert len(json.loads(capsys.readouterr().out)["documents"]) == 2
