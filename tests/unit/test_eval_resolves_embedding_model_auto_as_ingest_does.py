"""``hybrid-rag eval`` on a judged collection, in a fresh data dir, embeds with the model that
``hybrid-rag ingest`` of the same texts would choose (``embedding.model: auto``), and says which.

The models are stood in for by the hash embedder under the chosen model's name, so that what is
tested is the choice, not the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_rag import cli
from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import run_experiment
from hybrid_rag.evaluation.metrics import load_beir
from hybrid_rag.models.auto import AutoEmbedder, is_auto
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import EmbeddingSettings, Settings

PARAGRAPHS = {
    "p0": "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите «Забыли пароль».",
    "p1": "Поезд отправляется с центрального вокзала каждый час, билеты продаются в кассе.",
    "p2": "Погода в горах меняется быстро: утром солнце, а к вечеру часто идёт сильный дождь.",
}
QUESTIONS = {"q0": ("как сбросить пароль", "p0"), "q1": ("когда уходит поезд", "p1")}


def _fake(settings: EmbeddingSettings) -> FakeEmbedder:
    return FakeEmbedder(64, model_name=settings.model)


@pytest.fixture
def auto_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` chooses as it does; the chosen model is the hash embedder under its name."""
    monkeypatch.setattr(
        "hybrid_rag.engine.make_embedder",
        lambda s: AutoEmbedder(s, _fake) if is_auto(s.model) else _fake(s),
    )
    monkeypatch.setattr("hybrid_rag.models.auto.multilingual_runtime_installed", lambda: True)


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc_id, text in PARAGRAPHS.items():
            f.write(json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, (text, _) in QUESTIONS.items():
            f.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, (_, d) in QUESTIONS.items()]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _ingested_model(tmp_path: Path) -> str:
    docs = tmp_path / "docs"
    docs.mkdir()
    for doc_id, text in PARAGRAPHS.items():
        (docs / f"{doc_id}.md").write_text(text + "\n", encoding="utf-8")
    engine = Engine(Settings().with_overrides({"paths.data_dir": str(tmp_path / "ingested")}))
    try:
        engine.ingest([docs])
        return engine.embedder.model_name
    finally:
        engine.close()


def test_eval_of_a_russian_collection_picks_the_model_ingest_picks(auto_models: None, tmp_path: Path) -> None:
    ingested = _ingested_model(tmp_path)
    assert ingested == "multilingual-e5-small"
    dataset = load_beir(_beir(tmp_path / "ru_set"))
    [result] = run_experiment(dataset, Settings(), work_dir=tmp_path / "eval", warmup=0)
    assert result.model == ingested
    assert result.model_choice.startswith("embedding.model auto: multilingual-e5-small: 100% of the text")
    assert result.to_dict()["model"] == ingested


def test_eval_prints_the_model_it_used(
    auto_models: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _beir(tmp_path / "ru_set")
    code = cli.main(["--data-dir", str(tmp_path / "data"), "eval", "--dataset", str(data), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "# model: multilingual-e5-small (embedding.model auto: multilingual-e5-small: 100%" in out
    code = cli.main(["--data-dir", str(tmp_path / "d2"), "eval", "--dataset", str(data), "--quiet", "--json"])
    assert json.loads(capsys.readouterr().out)[0]["model"] == "multilingual-e5-small"


def test_a_study_run_by_the_harness_says_which_models_it_embedded_with(
    auto_models: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib
    import types

    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    harness = importlib.import_module("harness")
    dataset = load_beir(_beir(tmp_path / "ru_set"))

    def run(args: object) -> dict[str, object]:  # a study that evaluates the engine as eval does
        [result] = run_experiment(dataset, Settings(), work_dir=tmp_path / "study", warmup=0)
        return {"mrr": result.report.means["mrr@10"]}

    study = types.SimpleNamespace(run=run, __doc__="a study")
    monkeypatch.setattr(harness, "load_study", lambda name: study)
    monkeypatch.setattr("hybrid_rag.models.auto._USED", {})
    written = harness.run_study("tiny", ["--out", str(tmp_path / "tiny.json")])
    said = "# embedding models used: multilingual-e5-small (embedding.model auto: multilingual-e5-small: "
    assert said in capsys.readouterr().err
    result = json.loads(written.read_text())
    assert list(result["environment"]["embedding_models"]) == ["multilingual-e5-small"]
    line = harness.environment_line(result)
    assert "embedding model(s): multilingual-e5-small (embedding.model auto" in line
