"""`embedding.threads: auto` gives torch the cores other processes leave free, at least one."""

from __future__ import annotations

import os

import pytest

from hybrid_rag.models.embedders import CpuSample, SentenceTransformerEmbedder, auto_threads
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

CASES = [(2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 7.0, 1), (8, 2.2, 6), (1, 0.0, 1)]


@pytest.mark.parametrize(("cores", "busy", "threads"), CASES)
def test_auto_threads_are_the_free_cores_and_never_zero(cores: int, busy: float, threads: int) -> None:
    assert auto_threads(cores, busy) == threads


def test_busy_elsewhere_leaves_out_this_process() -> None:
    # 2 cores, 1 s: 150 of 200 ticks busy (1.5 cores), 0.5 s of them this process's own -> 1 core
    before = CpuSample(busy=1000, total=4000, own_seconds=2.0, wall=10.0)
    after = CpuSample(busy=1150, total=4200, own_seconds=2.5, wall=11.0)
    assert before.busy_elsewhere(after, cores=2) == pytest.approx(1.0)
    assert before.busy_elsewhere(before, cores=2) == 0.0  # no time passed: nothing known
    idle = CpuSample(busy=1000, total=4200, own_seconds=2.9, wall=11.0)  # own > everyone: clamped
    assert before.busy_elsewhere(idle, cores=2) == 0.0


def test_auto_is_the_default_and_other_values_are_refused() -> None:
    assert EmbeddingSettings().threads == "auto"
    assert EmbeddingSettings(threads=3).threads == 3 and EmbeddingSettings(threads=None).threads is None
    for bad in (0, True, "many"):
        with pytest.raises(ValueError, match="threads"):
            EmbeddingSettings(threads=bad)


@pytest.mark.slow
def test_auto_sets_torchs_threads_when_the_model_loads() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        emb = SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, threads="auto"))
        assert emb.embed_queries(["jet engines"]).shape == (1, 384)
        if CpuSample.take() is not None:
            assert emb.threads == torch.get_num_threads() and 1 <= emb.threads <= (os.cpu_count() or 1)
    finally:
        torch.set_num_threads(before)
