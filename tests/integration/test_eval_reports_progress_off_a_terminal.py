"""`hybrid-rag eval` says how far it is when stderr is not a terminal (a CI log, a pipe): plain
lines on stderr, a few seconds apart and one at the end of each stage, no escape sequences."""

import json
from pathlib import Path

import pytest

from hybrid_rag.cli import _Bars, main

pytestmark = pytest.mark.integration


def _beir(root: Path, docs: int = 12, queries: int = 6) -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": f"d{i}", "title": f"Doc {i}", "text": f"topic {i} words about item {i}"} for i in range(docs)
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    asked = [{"_id": f"q{i}", "text": f"item {i}"} for i in range(queries)]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in asked) + "\n")
    qrels = "\n".join(f"q{i}\td{i}\t1" for i in range(queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels + "\n")
    return root


def test_eval_prints_plain_progress_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_HOME", str(tmp_path / "home"))
    dataset = _beir(tmp_path / "tiny")
    assert main(["eval", "--dataset", str(dataset), "--mode", "bm25", "--mode", "dense"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err
    lines = err.splitlines()
    assert "hybrid-rag eval: queries bm25 6/6 (100%)" in lines
    assert "hybrid-rag eval: queries dense 6/6 (100%)" in lines
    assert main(["eval", "--dataset", str(dataset), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_plain_lines_are_throttled_but_the_last_is_always_said(capsys):
    bars = _Bars(True, every=3600)
    for done in range(101):
        bars("queries hybrid", done, 100)
    assert capsys.readouterr().err.splitlines() == [
        "hybrid-rag: queries hybrid 0/100 (0%)",
        "hybrid-rag: queries hybrid 100/100 (100%)",
    ]
