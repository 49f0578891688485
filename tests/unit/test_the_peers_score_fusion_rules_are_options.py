"""LlamaIndex's relative-score fusion and distribution-based score fusion (DBSF: each list scaled
by mean ± 3 standard deviations) are options of ``retrieval.fusion``, and any rule can be asked
for one call (``query(..., fusion=...)``) without touching the config. Over lists completed with
exact scores DBSF ranks as the z-score rule does (it is a linear map of the z-score); they differ
where a list lacks a candidate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.errors import ConfigError
from hybrid_rag.retrieval.fusion import (
    FusionMode,
    dbsf_fusion,
    dbsf_normalize,
    fuse_runs,
    relative_score_fusion,
    weighted_fusion,
    zscore_fusion,
)
from hybrid_rag.settings import Settings
from hybrid_rag.types import Hit

RUNS = {
    "dense": [Hit(1, 0.62), Hit(2, 0.60), Hit(3, 0.35), Hit(5, 0.30)],
    "bm25": [Hit(2, 9.0), Hit(4, 3.0), Hit(1, 3.0), Hit(6, 1.0)],
}
WEIGHTS = {"dense": 0.65, "bm25": 0.35}


def test_dbsf_maps_three_standard_deviations_either_side_of_the_mean_to_zero_and_one() -> None:
    scores = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    mu, sd = scores.mean(), scores.std()
    assert dbsf_normalize(scores) == pytest.approx((scores - (mu - 3 * sd)) / (6 * sd))
    assert dbsf_normalize(np.array([4.0, 4.0])).tolist() == [1.0, 1.0]  # no spread: both count
    with pytest.raises(ValueError):
        dbsf_normalize(np.array([1.0, np.nan]))


def test_dbsf_counts_an_absent_candidate_three_deviations_below_the_mean_not_at_it() -> None:
    # chunk 4 and 6 are BM25-only, 3 and 5 dense-only: zscore counts an absent chunk as the list's
    # mean hit, dbsf as 3 sd below it, so the orders differ where lists are incomplete
    dbsf = [f.id for f in dbsf_fusion(RUNS, WEIGHTS)]
    z = [f.id for f in zscore_fusion(RUNS, WEIGHTS)]
    assert dbsf != z
    assert dbsf[:2] == [2, 1]


def test_over_complete_lists_dbsf_ranks_as_the_zscore_rule() -> None:
    complete = {
        "dense": [Hit(1, 0.62), Hit(2, 0.60), Hit(3, 0.35), Hit(4, 0.33)],
        "bm25": [Hit(2, 9.0), Hit(4, 3.0), Hit(1, 2.5), Hit(3, 0.0)],
    }
    assert [f.id for f in dbsf_fusion(complete, WEIGHTS)] == [f.id for f in zscore_fusion(complete, WEIGHTS)]


def test_relative_score_fusion_is_min_max_and_a_weighted_sum() -> None:
    fused = {f.id: f.score for f in relative_score_fusion(RUNS, WEIGHTS)}
    # dense: (s - 0.30) / 0.32; bm25: (s - 1) / 8; absent adds 0
    assert fused[1] == pytest.approx(0.65 * 1.0 + 0.35 * 0.25)
    assert fused[4] == pytest.approx(0.35 * 0.25)
    assert fused[5] == pytest.approx(0.0)
    assert relative_score_fusion(RUNS, WEIGHTS) == weighted_fusion(RUNS, WEIGHTS)


@pytest.mark.parametrize("mode", ["relative_score", "dbsf"])
def test_fuse_runs_takes_the_new_rules_by_name(mode: str) -> None:
    rule = relative_score_fusion if mode == "relative_score" else dbsf_fusion
    expected = rule(RUNS, WEIGHTS)
    assert fuse_runs(RUNS, mode, WEIGHTS) == expected
    assert FusionMode.from_str(mode).value == mode


def test_settings_accept_the_new_rules_and_name_the_valid_ones_otherwise(tmp_path: Path) -> None:
    for mode in ("relative_score", "dbsf"):
        assert Settings().with_overrides({"retrieval.fusion": mode}).retrieval.fusion == mode
    with pytest.raises(Exception, match="dbsf"):
        Settings().with_overrides({"retrieval.fusion": "combsum"})


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    texts = {
        "resets.md": "# Password resets\n\nA password reset link is valid for fifteen minutes.",
        "backups.md": "# Backups\n\nThe database is backed up every night and kept for thirty days.",
        "deploy.md": "# Deploying\n\nThe service is deployed with docker compose behind nginx.",
        "tokens.md": "# Tokens\n\nAn API token is valid until revoked; reset it from the console.",
        "pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self.idle.pop()\n",
    }
    docs = write_tree(
        tmp_path_factory.mktemp("fusion_rules") / "docs", {n: t + "\n" for n, t in texts.items()}
    )
    with engine_over(docs) as eng:
        yield eng


def _fusion_scores(engine: Engine, **kwargs: object) -> list[tuple[str, float]]:
    plain = {"expansion": False, "path_roles": False, "path_match": False, "file_coherence": False}
    result = engine.query("how long is a password reset link valid", features=plain, **kwargs)  # fused scores
    return [(c.chunk.path, round(c.score, 9)) for c in result.chunks]


def test_one_call_can_ask_for_another_fusion_rule_without_changing_the_config(engine: Engine) -> None:
    default = _fusion_scores(engine)
    assert engine.settings.retrieval.fusion == "zscore"
    assert _fusion_scores(engine, fusion="zscore") == default
    relative = _fusion_scores(engine, fusion="relative_score")
    assert relative != default  # min-max scores lie in [0, 1]; z-scores do not
    assert all(0.0 <= s <= 1.0 + 1e-9 for _, s in relative)
    rrf = _fusion_scores(engine, fusion="rrf")
    assert all(s <= 2 / 61 + 1e-9 for _, s in rrf)  # RRF: sum of weight / (60 + rank), weights sum 2
    assert _fusion_scores(engine) == default  # the override did not stick
    with pytest.raises(ConfigError, match="relative_score"):
        engine.query("password reset", fusion="combsum")
