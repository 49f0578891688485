"""`embedding.threads: auto` gives torch the cores other processes leave free, at least one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models.embedders import (
    CpuSample,
    SentenceTransformerEmbedder,
    auto_threads,
    children_cpu_seconds,
)
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


def _stat(pid: int, name: str, ppid: int, utime: int, stime: int) -> str:
    # proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    # utime stime ...
    return f"{pid} ({name}) S {ppid} 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 1 0\n"


def test_this_process_s_children_count_as_its_own_work(tmp_path: Path) -> None:
    """An ingest's term workers (ingest/term_prefetch.py) are its own: counted as another
    process's, they held the model at one thread on 2 idle cores (RESULTS.md#cpu-vector-width)."""
    ticks = os.sysconf("SC_CLK_TCK")
    for pid, name, ppid, utime, stime in [
        (11, "python3", 10, 2 * ticks, ticks),  # a worker: 3 s
        (12, "odd ) name", 10, ticks, 0),  # a parenthesis in the name: 1 s
        (13, "other", 1, 50 * ticks, 0),  # not a child
    ]:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(_stat(pid, name, ppid, utime, stime))
    (tmp_path / "14").mkdir()  # gone while read: skipped
    (tmp_path / "self").mkdir()
    assert children_cpu_seconds(10, tmp_path) == pytest.approx(4.0)
    assert children_cpu_seconds(99, tmp_path) == 0.0
    assert children_cpu_seconds(10, tmp_path / "missing") == 0.0


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux /proc")
def test_a_live_child_s_cpu_time_is_in_the_sample() -> None:
    spin = "\n".join(
        [
            "import sys, time",
            "t = time.process_time()",
            "while time.process_time() - t < 0.6: pass",
            "print(1, flush=True)",
            "sys.stdin.read()",
        ]
    )
    before = CpuSample.take()
    child = subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"1"
        during = CpuSample.take()
    finally:
        child.communicate(b"")
    assert before is not None and during is not None
    assert during.own_seconds - before.own_seconds >= 0.5


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


@pytest.mark.slow
def test_auto_threads_are_measured_again_while_an_ingest_embeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load at model load (a query, the ingest's own term worker) gives one thread; the batches
    after it look again every RETUNE_SECONDS and take the second core once it is free. A query
    (fewer texts than RETUNE_MIN_TEXTS) never rebuilds the session."""
    from hybrid_rag.models import onnx_runtime
    from hybrid_rag.models.embedders import RETUNE_MIN_TEXTS, RETUNE_SECONDS
    from hybrid_rag.models.onnx_runtime import OnnxModel, embedder_files

    samples = [
        CpuSample(busy=0, total=0, own_seconds=0.0, wall=0.0),  # before the load
        CpuSample(busy=50, total=100, own_seconds=0.0, wall=1.0),  # after it: one core busy elsewhere
        CpuSample(busy=50, total=100, own_seconds=0.0, wall=1.0),  # the retune's starting point
        CpuSample(busy=60, total=200, own_seconds=0.0, wall=2.0),  # a query soon after: too soon
        CpuSample(busy=60, total=300, own_seconds=0.0, wall=1.0 + RETUNE_SECONDS),  # others idle
    ]
    monkeypatch.setattr(onnx_runtime.CpuSample, "take", classmethod(lambda cls: samples.pop(0)))
    monkeypatch.setattr(onnx_runtime.os, "cpu_count", lambda: 2)
    files = embedder_files("sentence-transformers/all-MiniLM-L6-v2")
    assert files is not None
    model = OnnxModel(files, threads="auto")
    texts = [f"jet engine number {i} and its turbine blades" for i in range(RETUNE_MIN_TEXTS)]
    first = model.embed(texts, batch_size=4)
    assert model.threads == 1
    session = model._session
    model.embed(texts[:1], batch_size=4)  # a query: no sample taken, the session kept
    assert model._session is session and len(samples) == 2
    model.embed(texts, batch_size=4)  # too soon after the load: measured, kept
    assert model.threads == 1 and model._session is session and len(samples) == 1
    again = model.embed(texts, batch_size=4)  # RETUNE_SECONDS later, the other core free
    assert model.threads == 2 and model._session is not session and samples == []
    np.testing.assert_allclose(again, first, atol=1e-5)
