"""The quick bench (``hybrid-rag bench``), the synthetic corpus, and the suite's pure helpers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import bm25s
import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.errors import ConfigError, InputError
from hybrid_rag.evaluation.bench import (
    build_vocabulary,
    format_quick_bench,
    lucene_bm25_csc,
    machine_info,
    made_up_word,
    quick_dataset,
    run_quick_bench,
    sample_word_ids,
    zipf_cdf,
)
from hybrid_rag.evaluation.metrics import EvalReport
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    """A module of benchmarks/ (``harness``, ``report``, ``studies.suite``, ...), imported as the
    harness imports it (benchmarks/ on the path)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


# -- the quick bench -------------------------------------------------------------------------------


def test_quick_bench_with_the_fake_embedder_passes_its_checks() -> None:
    settings = fake_settings()
    result = run_quick_bench(settings, docs=12, queries=6)
    assert result["ok"], format_quick_bench(result)
    assert set(result["modes"]) == {"bm25", "dense", "hybrid"}
    assert result["corpus"]["docs"] == 12 and result["corpus"]["queries"] == 6
    assert result["corpus"]["chunks"] > 12  # some documents are longer than one chunk
    for row in result["modes"].values():
        assert row["answered"] == 6
        assert "total" in row["latency_ms"] and row["latency_ms"]["total"]["p50"] > 0
    assert result["modes"]["bm25"]["metrics"]["ndcg@10"] >= 0.9
    assert "quick bench" in format_quick_bench(result)


def test_quick_bench_never_writes_to_the_configured_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = fake_settings(data)
    run_quick_bench(settings, docs=4, queries=2)
    assert not data.exists()


def test_format_quick_bench_shows_a_failed_check() -> None:
    result = {
        "corpus": {"docs": 1, "chunks": 1, "queries": 1},
        "embedder": "fake",
        "ingest_seconds": 0.1,
        "seconds": 0.2,
        "modes": {},
        "checks": [{"name": "bm25 finds the planted documents", "ok": False, "detail": "nDCG@10 0.1"}],
    }
    assert "FAIL bm25 finds the planted documents (nDCG@10 0.1)" in format_quick_bench(result)


def test_quick_dataset_plants_topic_words_in_exactly_one_document() -> None:
    dataset = quick_dataset(docs=10, queries=5, seed=3)
    assert len(dataset.corpus) == 10 and len(dataset.queries) == 5
    for qid, query in dataset.queries.items():
        (relevant,) = dataset.qrels[qid]
        word = query.split()[4]  # "what is known about <topic> and <topic>?"
        holders = [d for d, (title, text) in dataset.corpus.items() if word in f"{title} {text}".split()]
        assert holders == [relevant]
    assert quick_dataset(docs=10, queries=5, seed=3) == dataset  # deterministic


def test_quick_dataset_rejects_more_queries_than_documents() -> None:
    with pytest.raises(InputError, match="queries"):
        quick_dataset(docs=3, queries=4)


# -- synthetic text --------------------------------------------------------------------------------


def test_made_up_words_are_unique_and_grow_with_the_index() -> None:
    words = [made_up_word(i) for i in range(20_000)]
    assert len(set(words)) == len(words)
    assert len(made_up_word(0)) < len(made_up_word(19_999))
    with pytest.raises(ValueError):
        made_up_word(-1)


def test_vocabulary_puts_stop_words_first_then_real_words_in_order() -> None:
    vocab = build_vocabulary(12, real_words=["zebra", "apple", "x2", "apple"], stop_words=["the", "of"])
    assert vocab[:4] == ["the", "of", "zebra", "apple"]  # "x2" is not alphabetic, repeats once
    assert len(vocab) == len(set(vocab)) == 12
    with pytest.raises(ValueError):
        build_vocabulary(0)


def test_zipf_sampling_follows_the_law() -> None:
    cdf = zipf_cdf(1000)
    assert np.all(np.diff(cdf) > 0) and cdf[-1] == pytest.approx(1.0)
    ids = sample_word_ids(cdf, 200_000, np.random.default_rng(0))
    assert ids.min() >= 0 and ids.max() < 1000
    counts = np.bincount(ids, minlength=1000)
    # rank 1 is twice as frequent as rank 2, ten times rank 10 (exponent 1)
    assert counts[0] / counts[1] == pytest.approx(2.0, rel=0.05)
    assert counts[0] / counts[9] == pytest.approx(10.0, rel=0.1)


def test_direct_bm25_matrix_scores_like_bm25s() -> None:
    rng = np.random.default_rng(1)
    docs = [rng.integers(0, 40, size=int(rng.integers(1, 25))) for _ in range(150)]
    docs[7] = np.zeros(0, dtype=np.int64)  # an empty document
    blocks = [
        (np.concatenate(docs[i : i + 64]), np.array([len(d) for d in docs[i : i + 64]])) for i in (0, 64, 128)
    ]
    scores, present = lucene_bm25_csc(blocks, k1=1.2, b=0.6)
    terms = sorted({int(t) for d in docs for t in d})
    assert present.tolist() == terms and scores["num_docs"] == 150
    reference = bm25s.BM25(k1=1.2, b=0.6, method="lucene")
    vocab = {t: i for i, t in enumerate(terms)}
    reference.index(
        ([[vocab[int(t)] for t in d] for d in docs], vocab), create_empty_token=False, show_progress=False
    )
    direct = bm25s.BM25(k1=1.2, b=0.6, method="lucene")
    direct.scores, direct.vocab_dict, direct.nonoccurrence_array = scores, vocab, None
    for query in ([1, 2, 3], [7], [10, 10, 20], [39]):
        ids = [vocab[t] for t in query if t in vocab]
        assert np.allclose(direct.get_scores_from_ids(ids), reference.get_scores_from_ids(ids), atol=1e-5)


def test_machine_info_names_the_machine() -> None:
    info = machine_info()
    assert info["cores"] >= 1 and len(info["load_average"]) == 3
    assert info["cpu_model"] and "faiss-cpu" in info["libraries"]


# -- the suite's helpers ---------------------------------------------------------------------------


def test_every_configuration_in_the_ablation_list_is_valid() -> None:
    configs = _load("studies._suite_configs")
    names = [c.name for c in configs.CONFIGS]
    assert len(names) == len(set(names)) and configs.BASELINE in names
    for config in configs.CONFIGS:
        settings = config.settings(Settings())  # a typo in an override key fails here
        assert config.resolved_mode(Settings()) in ("bm25", "dense", "hybrid")
        assert set(config.features) <= set(type(settings.features).model_fields)


def test_configurations_share_an_ingest_unless_they_change_the_index() -> None:
    configs = _load("studies._suite_configs")
    query_time = configs.BenchConfig("a", "", "hybrid", {"rerank": True}, {"retrieval.rrf_k": 10})
    other_k1 = configs.BenchConfig("b", "", "bm25", {}, {"bm25.k1": 0.9})
    groups = configs.group_by_index([configs.CONFIGS[0], query_time, other_k1], Settings())
    assert [[c.name for c in g] for g in groups.values()] == [["bm25", "a"], ["b"]]
    with pytest.raises(ConfigError, match="nope"):
        configs.select_configs(["bm25", "nope"])
    assert [c.name for c in configs.select_configs(["default", "bm25"])] == ["bm25", "default"]


def test_limit_queries_keeps_evenly_spaced_queries() -> None:
    run = _load("studies.suite")
    dataset = quick_dataset(docs=10, queries=10)
    kept = run.limit_queries(dataset, 3)
    assert list(kept.queries) == ["q000", "q003", "q006"]
    assert set(kept.qrels) == set(kept.queries) and kept.corpus is dataset.corpus
    assert run.limit_queries(dataset, None) is dataset


def test_replace_block_keeps_everything_outside_the_markers() -> None:
    harness = _load("harness")
    first = harness.replace_block("# Results\n\nOthers' text.\n", "suite", "table one")
    assert first.startswith(
        "# Results\n\nOthers' text.\n\n<!-- suite:begin -->\ntable one\n<!-- suite:end -->"
    )
    around = "intro\n" + first + "\n## Later section by someone else\n"
    second = harness.replace_block(around, "suite", "table two")
    assert "table one" not in second and "table two" in second
    assert second.startswith("intro\n# Results\n\nOthers' text.") and second.endswith(
        "## Later section by someone else\n"
    )
    assert harness.replace_block(second, "suite", "table two") == second
    assert harness.replace_block(second, "peers", "x").count("<!-- suite:begin -->") == 1
    with pytest.raises(ValueError, match="markers"):
        harness.replace_block("<!-- suite:begin --> no end", "suite", "x")


def _record(dataset: str, config: str, ndcg: list[float]) -> dict[str, object]:
    per_query = {"ndcg@10": {f"q{i}": v for i, v in enumerate(ndcg)}}
    return {
        "dataset": dataset,
        "config": config,
        "metrics": {"ndcg@10": float(np.mean(ndcg))},
        "per_query": per_query,
    }


def test_compare_suites_runs_a_paired_test_per_configuration() -> None:
    report = _load("report")
    base = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.2, 0.3]
    better = [v + 0.3 + 0.01 * (i % 3) for i, v in enumerate(base)]
    a = {"results": [_record("d", "x", base), _record("d", "only-a", base)], "datasets": [{"name": "d"}]}
    b = {"results": [_record("d", "x", better)], "datasets": [{"name": "d"}]}
    text = report.compare_suites(a, b)
    row = next(line for line in text.splitlines() if line.startswith("| d | x | nDCG@10"))
    assert "| +0.30" in row and row.endswith(" * |")
    assert "in one run only: d/only-a" in text
    assert isinstance(_load("studies._suite_tables").report_of(_record("d", "x", base)), EvalReport)


def test_evaluate_engine_queries_an_ingested_engine_without_ingesting(tmp_path: Path) -> None:
    from hybrid_rag.engine import Engine
    from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
    from hybrid_rag.models.embedders import FakeEmbedder

    dataset = quick_dataset(docs=6, queries=3)
    settings = Settings().with_overrides({"paths.data_dir": str(tmp_path)})
    engine = Engine(settings, embedder=FakeEmbedder(dimension=32))
    try:
        ingest_dataset(engine, dataset)
        versions = engine.stats().live_version
        bm25 = evaluate_engine(engine, dataset, mode="bm25", warmup=1, ingest_seconds=1.5)
        dense = evaluate_engine(engine, dataset, mode="dense", features={"mmr": True}, warmup=0)
        assert engine.stats().live_version == versions  # no new index version: nothing re-ingested
    finally:
        engine.close()
    assert (bm25.mode, dense.mode) == ("bm25", "dense") and bm25.queries == dense.queries == 3
    assert bm25.ingest_seconds == 1.5 and bm25.chunks == dense.chunks > 0
    assert "wall" in bm25.latency_ms and "bm25" in bm25.latency_ms and "dense" not in bm25.latency_ms
    assert "mmr" in dense.latency_ms and dense.features == {"mmr": True}
    assert bm25.report.means["ndcg@10"] == 1.0


def test_summarize_notes_counts_per_query_notes_under_their_prefix() -> None:
    report = _load("studies._suite_tables")
    notes = {f"expanded with: term{i}" for i in range(5)} | {"rerank skipped: no reranker configured"}
    out = report.summarize_notes(notes)
    assert out == [
        "`expanded with: …` (5 distinct, e.g. `expanded with: term0`)",
        "`rerank skipped: no reranker configured`",
    ]
