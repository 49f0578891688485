"""The ablation list of the benchmark suite: named feature and settings overrides (data, not code).

Each :class:`BenchConfig` is the shipped settings plus its own ``features`` (per-call flags, see
``FeatureFlags``) and ``overrides`` (dotted settings keys, see ``configs/default.yaml``). The
baselines pin every optional stage off, so they stay what their name says while the defaults
move; ``default`` is whatever ``configs/default.yaml`` (or ``--config``) ships; ``+x`` is the
default with one stage switched on, ``-x`` with one switched off. Add an entry to
:data:`CONFIGS` to add a row to every table.

Overrides that change what is indexed (chunking, embedding, BM25, the dense scoring) need their
own ingest: :func:`index_key` groups configurations by the settings an index is built from, and
the suite study (``studies/suite.py``) ingests once per dataset and group.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import Settings

# settings sections an index version is built from: a change here needs a new ingest
INDEX_SECTIONS = ("chunking", "embedding", "bm25", "index", "dedupe")
OPTIONAL_STAGES_OFF: Mapping[str, bool] = {
    "expansion": False,
    "rerank": False,
    "mmr": False,
    "routing": False,
    "symbols": False,
    # ranking that knows code (retrieval/code_rank.py): a stage alone is its raw list
    "path_roles": False,
    "path_match": False,
    "file_coherence": False,
    "definition_first": False,
    "implementation": False,
}
EQUAL_RRF: Mapping[str, Any] = {
    "retrieval.fusion": "rrf",
    "retrieval.rrf_k": 60,
    "retrieval.dense_weight": 0.5,
    "retrieval.bm25_weight": 0.5,
    "retrieval.code_dense_weight": 0.5,
    "retrieval.code_bm25_weight": 0.5,
    "retrieval.exact_scores": False,  # the textbook rules: a chunk absent from a list adds nothing
}


def one_weight(dense: float, *, exact: bool) -> dict[str, Any]:
    """z-score fusion with one dense weight for every source type (BM25: 1 - dense)."""
    bm25 = round(1 - dense, 4)
    return {
        "retrieval.fusion": "zscore",
        "retrieval.exact_scores": exact,
        "retrieval.dense_weight": dense,
        "retrieval.bm25_weight": bm25,
        "retrieval.code_dense_weight": dense,
        "retrieval.code_bm25_weight": bm25,
    }


@dataclass(frozen=True)
class BenchConfig:
    """One row of the ablation: a retrieval mode (None: the settings' own), flags and overrides."""

    name: str
    description: str
    mode: str | None = None
    features: Mapping[str, bool] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def settings(self, base: Settings) -> Settings:
        """``base`` with this configuration's overrides applied and validated."""
        return base.with_overrides(dict(self.overrides)) if self.overrides else base

    def resolved_mode(self, base: Settings) -> str:
        return self.mode or self.settings(base).retrieval.mode

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "mode": self.mode,
            "features": dict(self.features),
            "overrides": dict(self.overrides),
        }


CONFIGS: tuple[BenchConfig, ...] = (
    BenchConfig("bm25", "BM25 alone", "bm25", OPTIONAL_STAGES_OFF),
    BenchConfig("dense", "dense alone (the configured dense scoring)", "dense", OPTIONAL_STAGES_OFF),
    BenchConfig(
        "hybrid-rrf-equal", "dense + BM25, RRF k=60, equal weights", "hybrid", OPTIONAL_STAGES_OFF, EQUAL_RRF
    ),
    BenchConfig(
        "hybrid-weighted-equal",
        "dense + BM25, min-max weighted sum, equal weights",
        "hybrid",
        OPTIONAL_STAGES_OFF,
        {**EQUAL_RRF, "retrieval.fusion": "weighted"},
    ),
    BenchConfig(
        "previous-default",
        "dense + BM25, z-score 0.75/0.25 for every source type, absent = list average",
        "hybrid",
        OPTIONAL_STAGES_OFF,
        one_weight(0.75, exact=False),
    ),
    BenchConfig(
        "hybrid-zscore-exact-0.75",
        "dense + BM25, z-score over exact scores, 0.75/0.25 for every source type",
        "hybrid",
        OPTIONAL_STAGES_OFF,
        one_weight(0.75, exact=True),
    ),
    BenchConfig("default", "the shipped settings, unchanged"),
    BenchConfig("+routing", "default + code routing", features={"routing": True}),
    BenchConfig("no-symbols", "default without the symbol list", features={"symbols": False}),
    BenchConfig(
        "-expansion",
        "default without query expansion (fusion alone)",
        features={"expansion": False},
    ),
    BenchConfig("+rerank", "default + rerank", features={"rerank": True}),
    BenchConfig("+mmr", "default + MMR diversification", features={"mmr": True}),
    BenchConfig(
        "full",
        "every stage on: expansion + rerank + MMR",
        features={"expansion": True, "rerank": True, "mmr": True},
    ),
)
BASELINE = "default"  # every other configuration is tested against this one (paired, per query)


def select_configs(
    names: Sequence[str] | None, configs: Sequence[BenchConfig] = CONFIGS
) -> list[BenchConfig]:
    """The named configurations in list order (all when ``names`` is empty); an unknown name fails."""
    if not names:
        return list(configs)
    known = {c.name: c for c in configs}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown benchmark configuration {', '.join(unknown)}; known: {', '.join(known)}")
    wanted = set(names)
    return [c for c in configs if c.name in wanted]


def index_key(settings: Settings) -> str:
    """A short hash of the settings an index is built from: equal keys can share one ingest."""
    dump = settings.model_dump(mode="json")
    dump["embedding"].pop("batch_tokens", None)  # how calls are batched, not what the vectors are
    part = {section: dump[section] for section in INDEX_SECTIONS}
    return hashlib.sha256(json.dumps(part, sort_keys=True).encode()).hexdigest()[:10]


def group_by_index(configs: Sequence[BenchConfig], base: Settings) -> dict[str, list[BenchConfig]]:
    """Configurations grouped by :func:`index_key`, groups and members in list order."""
    groups: dict[str, list[BenchConfig]] = {}
    for config in configs:
        groups.setdefault(index_key(config.settings(base)), []).append(config)
    return groups
