"""``retrieval.path_priors``: a weight per path glob moves matching results on the fused ranking,
the first matching pattern decides, a weight of 1 or no priors change nothing, the flag turns the
stage off per call, and a bad prior is refused when the settings load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from engine_fixtures import make_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError
from hybrid_rag.retrieval.priors import apply_priors, prior_weight
from hybrid_rag.settings import PathPrior, Settings
from hybrid_rag.types import Chunk, ScoredChunk, SourceType

SAME = "def parse_filter(text):\n    return tokens(text)\n"


def scored(path: str, score: float, chunk_id: int) -> ScoredChunk:
    chunk = Chunk(chunk_id, chunk_id, path, 0, 1, 2, SAME, 10, str(chunk_id), SourceType.CODE, "python", "c")
    return ScoredChunk(chunk, score, {"fusion": score})


def test_the_first_matching_glob_gives_the_weight() -> None:
    priors = (PathPrior(pattern="tests/**", weight=0.5), PathPrior(pattern="**/*.py", weight=2.0))
    assert prior_weight(priors, "/repo/tests/unit/test_fusion.py") == 0.5
    assert prior_weight(priors, "/repo/src/fusion.py") == 2.0
    assert prior_weight(priors, "/repo/docs/fusion.md") == 1.0
    assert prior_weight(priors, "C:\\repo\\tests\\test_x.py") == 0.5


def test_a_demoted_test_falls_below_the_implementation_it_outscored() -> None:
    results = [
        scored("/r/tests/test_parse.py", 1.0, 1),
        scored("/r/src/parse.py", 0.9, 2),
        scored("/r/README.md", -1.0, 3),
    ]
    out = apply_priors(results, (PathPrior(pattern="tests/**", weight=0.8),))
    assert [r.id for r in out] == [2, 1, 3]
    spread = float(__import__("numpy").std([1.0, 0.9, -1.0]))
    assert out[1].score == pytest.approx(1.0 + math.log(0.8) * spread)
    assert out[1].breakdown["prior"] == 0.8 and "prior" not in out[0].breakdown


def test_the_default_priors_put_a_type_stub_below_the_module_it_declares() -> None:
    results = [
        scored("/r/src/pkg/more.pyi", 1.0, 1),
        scored("/r/src/pkg/more.py", 0.9, 2),
        scored("/r/docs/api.rst", 0.2, 3),
    ]
    out = apply_priors(results, Settings().retrieval.path_priors)
    assert [r.id for r in out] == [2, 1, 3]
    assert prior_weight(Settings().retrieval.path_priors, "/r/src/pkg/more.pyi") == 0.6
    assert prior_weight(Settings().retrieval.path_priors, "/r/src/pkg/more.py") == 1.0


def test_a_negative_score_is_still_demoted_not_raised() -> None:
    results = [scored("/r/src/a.py", -0.5, 1), scored("/r/tests/test_a.py", -0.4, 2)]
    out = apply_priors(results, (PathPrior(pattern="tests/**", weight=0.8),))
    demoted = next(r for r in out if r.id == 2)
    assert demoted.score < -0.4


def test_no_matching_prior_or_weight_one_keeps_the_fused_order() -> None:
    results = [scored("/r/tests/test_a.py", 1.0, 1), scored("/r/src/a.py", 0.9, 2)]
    assert apply_priors(results, ()) == results
    assert apply_priors(results, (PathPrior(pattern="tests/**", weight=1.0),)) == results
    assert apply_priors(results, (PathPrior(pattern="docs/**", weight=0.1),)) == results


def test_a_prior_of_zero_or_an_empty_pattern_is_refused_at_load() -> None:
    with pytest.raises(ConfigError, match="path_priors"):
        Settings().with_overrides({"retrieval.path_priors": [{"pattern": "tests/**", "weight": 0}]})
    with pytest.raises(ConfigError, match="path_priors"):
        Settings().with_overrides({"retrieval.path_priors": [{"pattern": "", "weight": 0.5}]})


def _two_files(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    body = "def merge_sorted_lists(a, b):\n    return sorted(a + b)\n"
    (root / "src" / "merge.py").write_text(body)
    (root / "tests" / "test_merge.py").write_text(
        body + "\n\ndef test_merge():\n    assert merge_sorted_lists([1], [0]) == [0, 1]\n"
    )
    return root


def test_the_engine_applies_priors_and_a_call_can_turn_them_off(tmp_path: Path) -> None:
    engine = Engine(make_settings(tmp_path, retrieval__path_priors=[{"pattern": "tests/**", "weight": 0.01}]))
    try:
        engine.ingest([_two_files(tmp_path / "repo")])
        # the code rules (retrieval/code_rank.py) off: the question names test_merge, which would
        # place its definition first and undo the test prior
        rules_off = dict.fromkeys(("definition_first", "path_roles", "path_match", "file_coherence"), False)
        question = "merge sorted lists test_merge"
        on = engine.query(question, mode="bm25", features=rules_off)
        off = engine.query(question, mode="bm25", features={"priors": False, **rules_off})
        assert on.chunks[0].path.endswith("src/merge.py")
        assert off.chunks[0].path.endswith("tests/test_merge.py")
        assert "priors" in [t.stage for t in on.trace.timings]
        assert "priors" not in [t.stage for t in off.trace.timings]
    finally:
        engine.close()
