"""SmoothQuant for a BERT graph before its int8 form (``embedding.quantize: int8-smooth``;
RESULTS.md#minilm-int8-smooth).

Dynamic int8 quantises each product's input with one scale per batch. A few input channels of a
BERT carry values tens of times larger than the rest (the GELU outputs the FFN output product
reads, some LayerNorm channels), so that one scale leaves the other channels a handful of levels:
that is where ``int8`` loses its quality (RESULTS.md#int8-by-layer kept those products fp32 instead).
SmoothQuant (Xiao et al., 2023) moves the difficulty into the weights, which take it better: each
input channel ``j`` of a product is divided by ``s_j`` and the weight's row ``j`` multiplied by it,
``X W = (X / s) (s W)``, exact in fp32, with ``s_j = max|X_j| ** alpha / max|W_j| ** (1 - alpha)``.
Here the division is a ``Mul`` node on the product's input branch only (the same tensor is the
residual stream, left as it is), and the weights are then quantised with a scale per output column
and 7-bit values (``onnx_graph.cached_int8_onnx``'s ``per_channel`` and ``reduce_range``).

``max|X_j|`` is read once, by running the fp32 graph over the fixed calibration texts packaged in
``data/calibration.jsonl.gz`` (96 passages of 1,000 characters, half this project's docs, half its
code) and over 64 sequences of 128 word pieces drawn at random from the vocabulary (seeded): a
maximum read from a sample of text underestimates the channels that sample leaves quiet, and the
random sequences widen them (mean cosine to fp32 on cosqa and cranfield texts 0.9935 from the texts
alone, 0.9959 with them; RESULTS.md#minilm-int8-smooth). A graph's vectors depend on the model and
``ALPHA`` / ``VERSION`` alone, never on a user's files.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.models.onnx_graph import named_int8_parts, write_model

ALPHA = 0.75  # how much of an input channel's range moves into the weights
VERSION = 1  # the calibration texts and the rewrite: another value, another graph file
CALIBRATION = Path(__file__).with_name("data") / "calibration.jsonl.gz"
_BATCH = 16
RANDOM_SEQUENCES, RANDOM_LENGTH, SEED = 64, 128, 0


def smoothed_file_name(alpha: float = ALPHA) -> str:
    """``model.smooth-a0.75-v1.onnx``: the smoothed fp32 graph, beside the graph it came from.

    >>> smoothed_file_name(), smoothed_file_name(0.5)
    ('model.smooth-a0.75-v1.onnx', 'model.smooth-a0.5-v1.onnx')
    """
    return f"model.smooth-a{alpha:g}-v{VERSION}.onnx"


def calibration_texts() -> list[str]:
    """The packaged calibration passages, in their order."""
    with gzip.open(CALIBRATION, "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


Feed = Callable[[Sequence[Any], int], dict[str, np.ndarray]]  # onnx_runtime.padded_feed


def cached_smoothed_onnx(
    fp32: Path, tokenizer: Path, max_length: int, feed: Feed, alpha: float = ALPHA
) -> Path:
    """``fp32`` with every layer product smoothed (module docstring), built once beside it; ``feed``
    makes a batch's model inputs from its encodings (``onnx_runtime.padded_feed``)."""
    target = fp32.with_name(smoothed_file_name(alpha))
    if target.is_file():
        return target
    import onnx

    model = onnx.load(str(fp32))
    maxima = input_maxima(model, tokenizer, max_length, calibration_texts(), feed)
    write_model(smoothed(model, maxima, alpha), target)
    return target


def input_maxima(
    model: Any,
    tokenizer: Path,
    max_length: int,
    texts: list[str],
    feed: Feed,
    random_sequences: int = RANDOM_SEQUENCES,
) -> dict[str, np.ndarray]:
    """``max|X_j|`` over ``texts``' real tokens (not the padding) and ``random_sequences`` random
    ones of each layer product's input tensor ``X``, by its name: the fp32 graph run with those
    tensors as extra outputs."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    parts = named_int8_parts(probe)  # names the nameless nodes first
    nodes = {n.name: n for n in probe.graph.node}
    wanted = sorted({nodes[name].input[0] for name in parts})
    for name in wanted:
        probe.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    encoder = Tokenizer.from_file(str(tokenizer))
    encoder.no_padding()
    encoder.enable_truncation(max_length)
    feeds = [
        feed(encoder.encode_batch(texts[start : start + _BATCH]), 0) for start in range(0, len(texts), _BATCH)
    ]
    feeds += random_feeds(encoder, min(RANDOM_LENGTH, max_length), random_sequences)
    maxima: dict[str, np.ndarray] = {}
    for batch in feeds:
        real = batch["attention_mask"].astype(bool)
        outputs = session.run(wanted, {k: v for k, v in batch.items() if k in names})
        for name, value in zip(wanted, outputs, strict=True):
            batch_max = np.abs(value[real]).max(axis=0)
            maxima[name] = np.maximum(maxima[name], batch_max) if name in maxima else batch_max
    return maxima


def random_feeds(encoder: Any, length: int, count: int = RANDOM_SEQUENCES) -> list[dict[str, np.ndarray]]:
    """``count`` model inputs of ``length`` word pieces drawn (seeded) from the vocabulary past its
    first thirtieth (where a BERT vocabulary keeps its special and unused pieces), between the
    tokenizer's ``[CLS]`` and ``[SEP]`` where it has them."""
    vocabulary = encoder.get_vocab_size()
    rng = np.random.default_rng(SEED)
    ids = rng.integers(vocabulary // 30, vocabulary, (count, length), dtype=np.int64)
    for column, token in ((0, "[CLS]"), (-1, "[SEP]")):
        found = encoder.token_to_id(token)
        if found is not None:
            ids[:, column] = found
    return [
        {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)}
        for batch in (ids[start : start + _BATCH] for start in range(0, count, _BATCH))
    ]


def smoothed(model: Any, maxima: dict[str, np.ndarray], alpha: float) -> Any:
    """``model`` (changed in place and returned) with each layer product's input divided by ``s``
    (a ``Mul`` before the product) and its weight rows multiplied by it."""
    from onnx import helper, numpy_helper

    weights = {t.name: t for t in model.graph.initializer}
    parts = named_int8_parts(model)
    muls = []
    for node in model.graph.node:
        if node.name not in parts:
            continue
        weight = numpy_helper.to_array(weights[node.input[1]])  # (input channels, outputs)
        x_max = np.maximum(maxima[node.input[0]], 1e-5)
        w_max = np.maximum(np.abs(weight).max(axis=1), 1e-5)
        s = np.clip(x_max**alpha / w_max ** (1 - alpha), 1e-3, 1e3).astype(np.float32)
        weights[node.input[1]].CopyFrom(numpy_helper.from_array(weight * s[:, None], node.input[1]))
        inverse = f"{node.input[1]}.smooth"
        model.graph.initializer.append(numpy_helper.from_array((1 / s).astype(np.float32), inverse))
        divided = f"{node.name}.smoothed_input"
        muls.append((node.name, helper.make_node("Mul", [node.input[0], inverse], [divided], name=divided)))
        node.input[0] = divided
    order = [n.name for n in model.graph.node]
    for before, mul in sorted(muls, key=lambda m: order.index(m[0]), reverse=True):
        model.graph.node.insert(order.index(before), mul)
    return model
