"""On the CPU a model call feeds at most ``embedding.batch_tokens`` word pieces, padding included:
long windows go a few at a time, short ones up to ``batch_size``; the vectors do not change
(RESULTS.md#batch-tokens)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models.onnx_runtime import OnnxFiles, OnnxModel, embedder_files, length_batches
from hybrid_rag.settings import EmbeddingSettings


def test_a_batch_feeds_at_most_the_token_budget_and_holds_one_member_at_least() -> None:
    lengths = [300, 256, 256, 256, 256, 256, 120, 100, 100, 30, 30, 30, 30, 30, 30]
    batches = length_batches(lengths, 8, max_tokens=1024)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each once, in order
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 8
        assert len(b) == 1 or len(b) * lengths[b[0]] <= 1024
    assert batches[0] == [0, 1, 2]  # 3 x 300 pieces: a fourth would pass 1,024
    assert length_batches([5000], 8, max_tokens=1024)[0] == [0]  # longer than the budget: alone
    assert len(batches[-1]) == 8  # short ones fill up to batch_size


def test_no_budget_is_batch_size_alone_and_the_fill_rule_still_holds() -> None:
    assert length_batches([256] * 10, 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert length_batches([100, 95, 60, 58, 10], 4, fill=0.85, max_tokens=1000) == [[0, 1], [2, 3], [4]]


def test_the_budget_is_a_setting_with_a_default_and_null_turns_it_off() -> None:
    assert EmbeddingSettings().batch_tokens == 1024
    assert EmbeddingSettings(batch_tokens=None).batch_tokens is None
    for bad in (0, -5):
        with pytest.raises(ValueError, match="batch_tokens"):
            EmbeddingSettings(batch_tokens=bad)


def test_only_the_fp32_graph_built_here_on_the_cpu_takes_the_budget(tmp_path: Path) -> None:
    """An int8 graph quantizes a call's activations with one scale: batching would move its vectors
    (and int8-smooth gained nothing); a GPU wants large calls; a given ONNX file is not measured."""

    def model(device: str = "cpu", onnx: Path | None = None, **files: object) -> OnnxModel:
        given = OnnxFiles("m", tmp_path, onnx, tmp_path / "t.json", 256, **files)  # type: ignore[arg-type]
        return OnnxModel(given, 1, device=device)

    assert model().token_budget(1024) == 1024
    assert model().token_budget(None) is None
    assert model(quantize=True).token_budget(1024) is None
    assert model(quantize=True, per_channel=True, smooth=0.75).token_budget(1024) is None
    assert model(onnx=tmp_path / "model.onnx").token_budget(1024) is None
    assert model("cuda").token_budget(1024) is None


class _Recorder:
    """A session that records each call's [rows, width] and runs the real one."""

    def __init__(self, real: object) -> None:
        self.real, self.shapes = real, []

    def run(self, names: object, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.shapes.append(feed["input_ids"].shape)
        return self.real.run(names, feed)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


@pytest.mark.slow
def test_minilm_s_calls_keep_to_the_budget_and_give_the_same_vectors() -> None:
    files = embedder_files("sentence-transformers/all-MiniLM-L6-v2")
    assert files is not None
    model = OnnxModel(files, threads=1)
    texts = [
        " ".join(f"word{i}_{j} value" for j in range(n))
        for i, n in enumerate([200, 150, 120, 90, 8, 6, 5, 4])
    ]
    whole = model.embed(texts, 32, None)
    model._ensure()
    recorder = _Recorder(model._session)
    model._session = recorder
    capped = model.embed(texts, 32, 1024)
    assert all(rows == 1 or rows * width <= 1024 for rows, width in recorder.shapes)
    assert len(recorder.shapes) > 1 and max(rows for rows, _ in recorder.shapes) > 1
    assert np.min(np.sum(whole * capped, axis=1)) > 0.99999
