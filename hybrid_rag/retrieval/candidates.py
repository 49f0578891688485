"""What the pipeline's first stages hand on (``Candidates``), its retrieval modes, and the per-call
feature overrides (``resolve_flags``): the small types ``retrieval/retriever.py`` and its callers share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import FeatureFlags
from hybrid_rag.types import ConfigEnum, Hit


class RetrievalMode(ConfigEnum):
    DENSE = "dense"
    BM25 = "bm25"
    HYBRID = "hybrid"


@dataclass(frozen=True)
class Candidates:
    """What the first stages found: each retriever's ranked hits, by list name."""

    runs: Mapping[str, list[Hit]]
    query_vector: np.ndarray | None = None
    dense_replaced: bool = False  # HyDE searched instead of the query: "hyde" takes dense's full weight
    probes: Mapping[str, np.ndarray | str] = field(default_factory=dict)  # what searched each run
    first: tuple[int, ...] = ()  # the definitions the question names, told apart (definition_first)

    @property
    def ids(self) -> list[int]:
        return sorted({h.id for hits in self.runs.values() for h in hits})

    def rank_of(self, name: str) -> dict[int, tuple[int, float]]:
        return {h.id: (r, h.score) for r, h in enumerate(self.runs.get(name, []), start=1)}


def resolve_flags(defaults: FeatureFlags, overrides: Mapping[str, bool] | None) -> FeatureFlags:
    """Per-call feature overrides, e.g. ``{"rerank": False}``; an unknown name lists the valid ones,
    and a value that is not a bool is refused (``"false"`` would otherwise mean on)."""
    if not overrides:
        return defaults
    valid = set(FeatureFlags.model_fields)
    unknown = sorted(set(overrides) - valid)
    if unknown:
        raise ConfigError(f"unknown feature {', '.join(unknown)}; valid features: {', '.join(sorted(valid))}")
    not_bool = sorted(k for k, v in overrides.items() if not isinstance(v, bool))
    if not_bool:
        raise ConfigError(f"feature {', '.join(not_bool)} must be True or False")
    return defaults.model_copy(update=dict(overrides))
