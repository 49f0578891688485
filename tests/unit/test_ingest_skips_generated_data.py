"""Ingest skips machine-generated data by default, each file with its reason: lock files,
minified assets, data files over ``loading.max_data_file_bytes``, the data dir itself; a
``.hybridragignore`` (gitignore syntax) adds rules; ``loading.skip_generated: false`` keeps all."""

from __future__ import annotations

import json

from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.ingest.loaders import iter_files
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile


def make_repo(root):
    (root / "src").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    (root / "poetry.lock").write_text("[[package]]\n")
    (root / "web" / "app.min.js").write_text("var a=1;")
    (root / "web" / "bundle.js").write_text("var x=1;" * 400)  # one 3,200-character line
    (root / "web" / "small.js").write_text("export const a = 1;\n")
    (root / "config.json").write_text(json.dumps({"name": "demo"}))
    (root / "results.json").write_text(json.dumps({"rows": list(range(20_000))}))
    (root / "notes").mkdir()
    (root / "notes" / "draft.md").write_text("# draft\n")
    (root / "notes" / "keep.md").write_text("# keep\n")
    (root / ".hybridragignore").write_text("notes/draft.md\n")
    return root


def reasons(items) -> dict[str, str]:
    return {i.path.rsplit("/", 1)[-1]: i.reason for i in items if isinstance(i, SkippedFile)}


def loaded(items) -> set[str]:
    return {i.path.rsplit("/", 1)[-1] for i in items if isinstance(i, LoadedFile)}


def test_generated_files_are_skipped_with_their_reason(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    items = list(iter_files([repo], LoadingSettings()))
    assert loaded(items) == {"app.py", "small.js", "config.json", "keep.md", ".hybridragignore"}
    why = reasons(items)
    assert why["package-lock.json"] == why["poetry.lock"] == "lock file (generated)"
    assert why["app.min.js"] == "minified asset (generated)"
    assert why["bundle.js"].startswith("minified (lines average over")
    assert why["results.json"].startswith("data file of") and "max_data_file_bytes" in why["results.json"]
    assert "draft.md" not in why  # ignored by .hybridragignore: not read at all, like .gitignore


def test_skip_generated_off_keeps_them(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    items = list(iter_files([repo], LoadingSettings(skip_generated=False, use_gitignore=False)))
    assert {"package-lock.json", "poetry.lock", "app.min.js", "bundle.js", "results.json"} <= loaded(items)
    assert "draft.md" not in loaded(items)  # .hybridragignore is read even without .gitignore


def test_the_data_dir_is_never_ingested(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    settings = fake_settings(repo / "data")
    engine = Engine(settings)
    engine.ingest([repo])
    engine.query("main")  # writes logs/queries.jsonl inside the data dir
    report = engine.ingest([repo])
    engine.close()
    assert not report.plan.has_changes
    skipped = {s.path.rsplit("/", 1)[-1]: s.reason for s in report.plan.skipped}
    assert skipped["data"].startswith("the data dir")
    assert not any("/data/" in d.path for d in engine.store.documents())
