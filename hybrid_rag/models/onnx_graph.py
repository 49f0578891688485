"""A BERT encoder as an ONNX graph, built from safetensors weights with ``onnx.helper`` (no torch).

The packaged default embedder (all-MiniLM-L6-v2) ships as ``model.safetensors``; ONNX Runtime
needs a graph. :func:`bert_graph` writes the encoder of a Hugging Face ``BertModel`` (absolute
positions, post-layer-norm, exact erf GELU) in fp32, output ``last_hidden_state`` [batch, seq,
hidden]; pooling happens outside the graph. Each layer uses ONNX Runtime's fused CPU kernels
(``com.microsoft`` ``Attention``, ``SkipLayerNormalization``, ``BiasGelu``): the same arithmetic as
the plain-op graph before it (hidden states within 4e-6), in fewer passes over memory.
:func:`cached_bert_onnx` builds it once into the model cache (``HYBRID_RAG_MODEL_CACHE``, else
``~/.cache/hybrid-rag/models``), atomically: a temp file renamed into place, so two processes that
build at once both end with a whole file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.paths import model_cache_dir

GRAPH_VERSION = 4  # bump when the graph changes: the cache key includes it (3: fused kernels; 4: IR_VERSION)
OPSET = 17  # LayerNormalization
# the file format version: opset 17's own, not the newest the installed onnx writes (onnx 1.23 writes
# 14, which onnxruntime-gpu 1.31 refuses: "max supported IR version: 13"; RESULTS.md#gpu-embedding)
IR_VERSION = 8
FUSED = "com.microsoft"  # ONNX Runtime's contrib operators (Attention, SkipLayerNormalization, BiasGelu)
_MASKED = -1.0e9  # added to the attention score of a padding token (softmax weight 0)
NBITS_BLOCK = 32  # MatMulNBits's block_size: Q4_0's blocks


def _strip_prefix(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``bert.encoder...`` (a model with a head) → ``encoder...``; a bare BertModel as it is."""
    if any(k.startswith("bert.") for k in weights):
        return {k[5:]: v for k, v in weights.items() if k.startswith("bert.")}
    return weights


class _Graph:
    """Nodes and initialisers under unique names (a tiny builder around ``onnx.helper``)."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], domain=domain or None, **attrs))
        return out

    def ops(self, op_type: str, inputs: list[str], outputs: int, domain: str = "", **attrs: Any) -> list[str]:
        """A node of several outputs (``Split``)."""
        from onnx import helper

        self._n += 1
        names = [f"{op_type.lower()}_{self._n}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, domain=domain or None, **attrs))
        return names

    def nbits(self, x: str, q4: np.ndarray, scales: np.ndarray, name: str, accuracy: int) -> str:
        """``x @ W.T`` as ONNX Runtime's ``MatMulNBits`` over 4-bit codes (``e5_weights.nbits_packed``:
        [out, in / 32, 16] uint8, zero point 8) and a scale a block of 32 (fp32 [out, in / 32]);
        ``accuracy``: its ``accuracy_level`` (0: the products in fp32, 4: activations to int8)."""
        n, blocks, _ = q4.shape
        return self.op(
            "MatMulNBits",
            x,
            self.const(f"{name}.q4", q4),
            self.const(f"{name}.scale", scales.astype(np.float32)),
            domain=FUSED,
            K=blocks * NBITS_BLOCK,
            N=n,
            bits=4,
            block_size=NBITS_BLOCK,
            accuracy_level=accuracy,
        )

    def linear(self, x: str, weights: dict[str, np.ndarray], name: str, accuracy: int) -> str:
        """``x`` times the torch ``nn.Linear`` called ``name`` (no bias): ``MatMulNBits`` where the
        weights hold its 4-bit codes (``<name>.weight.q4``), else an fp32 ``MatMul``."""
        if f"{name}.weight.q4" in weights:
            q4, scales = weights[f"{name}.weight.q4"], weights[f"{name}.weight.scale"]
            return self.nbits(x, q4, scales, name, accuracy)
        return self.op("MatMul", x, self.weight_t(weights, name))

    def weight_t(self, weights: dict[str, np.ndarray], name: str) -> str:
        """The transposed weight of the torch ``nn.Linear`` called ``name`` (x @ W.T)."""
        return self.const(f"{name}.weight_t", weights[f"{name}.weight"].astype(np.float32).T)

    def vector(self, weights: dict[str, np.ndarray], name: str) -> str:
        return self.const(name, weights[name].astype(np.float32))

    def skip_layer_norm(
        self, x: str, skip: str, bias: str, weights: dict[str, np.ndarray], name: str, eps: float
    ) -> str:
        """LayerNorm(x + bias + skip): a linear layer's bias, the residual and the norm in one kernel."""
        scale, shift = self.vector(weights, f"{name}.weight"), self.vector(weights, f"{name}.bias")
        return self.op("SkipLayerNormalization", x, skip, scale, shift, bias, domain=FUSED, epsilon=eps)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], name: str, eps: float) -> str:
        scale = self.const(f"{name}.weight", weights[f"{name}.weight"].astype(np.float32))
        bias = self.const(f"{name}.bias", weights[f"{name}.bias"].astype(np.float32))
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def _word_embeddings(g: _Graph, w: dict[str, np.ndarray], hidden: int) -> str:
    """The rows of ``input_ids``: gathered from fp32 weights, or, where the weights hold int8 codes
    and one scale a block of 32 (``embeddings.word_embeddings.q`` / ``.scale``: a 4-bit model read by
    ``e5_weights.py``), gathered as codes and dequantised (``code * scale``, fp32, as ``e5.c``); where
    they hold 4-bit codes (``.q4``), ONNX Runtime's ``GatherBlockQuantized`` does both."""
    if "embeddings.word_embeddings.q4" in w:  # 4-bit codes (zero point 8), dequantised by the gather
        return g.op(
            "GatherBlockQuantized",
            g.const("word.q4", w["embeddings.word_embeddings.q4"]),
            "input_ids",
            g.const("word.scale", w["embeddings.word_embeddings.scale"].astype(np.float32)),
            domain=FUSED,
            bits=4,
            block_size=NBITS_BLOCK,
            gather_axis=0,
            quantize_axis=1,
        )
    if "embeddings.word_embeddings.q" not in w:
        return g.op(
            "Gather", g.const("word", w["embeddings.word_embeddings.weight"].astype(np.float32)), "input_ids"
        )
    codes = g.op("Gather", g.const("word.q", w["embeddings.word_embeddings.q"].astype(np.int8)), "input_ids")
    scales = g.op("Gather", g.const("word.scale", w["embeddings.word_embeddings.scale"]), "input_ids")
    blocks = g.const("word.blocks", np.array([0, 0, -1, 32], np.int64))  # [batch, seq, blocks, 32]
    product = g.op(
        "Mul",
        g.op("Reshape", g.op("Cast", codes, to=1), blocks),  # 1: FLOAT
        g.op("Unsqueeze", scales, g.const("word.axis", np.array([-1], np.int64))),
    )
    return g.op("Reshape", product, g.const("word.shape", np.array([0, 0, hidden], np.int64)))


def _attention(
    g: _Graph, x: str, w: dict[str, np.ndarray], p: str, heads: int, mask: str, accuracy: int
) -> str:
    """Self-attention of layer ``p`` (before its output product): the fused ``Attention`` over the
    fp32 QKV weight, or, where the weights are 4-bit, one ``MatMulNBits`` for the three, split, and
    ``MultiHeadAttention`` (the same softmax, the biases added inside it)."""
    qkv = [f"{p}.attention.self.{n}" for n in ("query", "key", "value")]
    qkv_bias = g.const(f"{p}.qkv.bias", np.concatenate([w[f"{n}.bias"].astype(np.float32) for n in qkv]))
    if f"{qkv[0]}.weight.q4" in w:
        q4 = np.concatenate([w[f"{n}.weight.q4"] for n in qkv])
        scales = np.concatenate([w[f"{n}.weight.scale"] for n in qkv])
        q, k, v = g.ops("Split", [g.nbits(x, q4, scales, f"{p}.qkv", accuracy)], 3, axis=-1)
        return g.op(
            "MultiHeadAttention",
            q,
            k,
            v,
            qkv_bias,
            mask,
            domain=FUSED,
            num_heads=heads,
            mask_filter_value=_MASKED,
        )
    qkv_weight = np.concatenate([w[f"{n}.weight"].astype(np.float32).T for n in qkv], axis=1)
    return g.op(
        "Attention",
        x,
        g.const(f"{p}.qkv.weight_t", qkv_weight),
        qkv_bias,
        mask,
        domain=FUSED,
        num_heads=heads,
        mask_filter_value=_MASKED,
    )


def bert_graph(weights: dict[str, np.ndarray], config: dict[str, Any], accuracy: int = 0) -> Any:
    """The ONNX ``ModelProto`` of a BERT encoder: inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids`` (int64 [batch, seq]); output ``last_hidden_state`` (float32). A layer's linear
    weight given as 4-bit codes (``<name>.weight.q4`` / ``.scale``) runs as ``MatMulNBits`` at
    ``accuracy_level`` ``accuracy``."""
    from onnx import TensorProto, helper

    w = _strip_prefix(weights)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != (
        "absolute"
    ):
        raise ValueError("only BERT with gelu and absolute positions can be built without torch")
    g = _Graph()
    zero, one, two = (g.const(f"i64_{n}", np.array([n], np.int64)) for n in (0, 1, 2))
    seq_len = g.op("Slice", g.op("Shape", "input_ids"), one, two)  # [seq], 1-D
    x = g.op(
        "Add",
        g.op(
            "Add",
            _word_embeddings(g, w, hidden),
            g.op(
                "Slice",
                g.const("pos", w["embeddings.position_embeddings.weight"].astype(np.float32)),
                zero,
                seq_len,
                zero,
            ),
        ),
        g.op(
            "Gather",
            g.const("type", w["embeddings.token_type_embeddings.weight"].astype(np.float32)),
            "token_type_ids",
        ),
    )
    x = g.layer_norm(x, w, "embeddings.LayerNorm", eps)
    # Attention takes the raw 0/1 mask (int32 [batch, seq]); a padding key gets -1e9 before softmax
    mask = g.op("Cast", "attention_mask", to=TensorProto.INT32)
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        attended = _attention(g, x, w, p, heads, mask, accuracy)
        attended = g.linear(attended, w, f"{p}.attention.output.dense", accuracy)
        x = g.skip_layer_norm(
            attended,
            x,
            g.vector(w, f"{p}.attention.output.dense.bias"),
            w,
            f"{p}.attention.output.LayerNorm",
            eps,
        )
        inner = g.linear(x, w, f"{p}.intermediate.dense", accuracy)
        gelu = g.op("BiasGelu", inner, g.vector(w, f"{p}.intermediate.dense.bias"), domain=FUSED)  # exact erf
        out = g.linear(gelu, w, f"{p}.output.dense", accuracy)
        x = g.skip_layer_norm(out, x, g.vector(w, f"{p}.output.dense.bias"), w, f"{p}.output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ids = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden])
    graph = helper.make_graph(g.nodes, "bert", ids, [output], initializer=g.inits)
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(FUSED, 1)],
        producer_name="hybrid-rag",
        ir_version=IR_VERSION,
    )


# the quantisable products of one encoder layer, by the weight each reads (bert_graph's names)
INT8_PARTS = {
    "qkv": ".qkv.weight_t",
    "attn_out": ".attention.output.dense.weight_t",
    "ffn_in": ".intermediate.dense.weight_t",
    "ffn_out": ".output.dense.weight_t",
}


def int8_part(weight: str) -> str | None:
    """``"<layer>.<part>"`` of a layer's weight initialiser, else None.

    >>> int8_part("encoder.layer.5.output.dense.weight_t"), int8_part("encoder.layer.0.qkv.weight_t")
    ('5.ffn_out', '0.qkv')
    >>> int8_part("encoder.layer.2.attention.output.dense.weight_t"), int8_part("word")
    ('2.attn_out', None)
    """
    if not weight.startswith("encoder.layer."):
        return None
    layer, _, rest = weight[len("encoder.layer.") :].partition(".")
    rest = "." + rest
    found = [part for part, suffix in INT8_PARTS.items() if rest == suffix]
    return f"{layer}.{found[0]}" if found else None


def named_int8_parts(model: Any) -> dict[str, str]:
    """Names every nameless node of ``model`` (a ``bert_graph`` ModelProto, in place) after its
    output, and returns node name -> ``"<layer>.<part>"`` for each MatMul / Attention that reads a
    layer's weight: what ``quantize_dynamic``'s ``nodes_to_exclude`` takes."""
    parts = {}
    for node in model.graph.node:
        if not node.name:
            node.name = node.output[0]
        if node.op_type in ("MatMul", "Attention") and len(node.input) > 1:
            part = int8_part(node.input[1])
            if part is not None:
                parts[node.name] = part
    return parts


def int8_file_name(keep: frozenset[str], per_channel: bool = False, reduce_range: bool = False) -> str:
    """``model.int8.onnx``, or with the parts kept fp32 (per-channel scales, 7-bit weights) in its
    name (another graph, another file).

    >>> int8_file_name(frozenset()), int8_file_name(frozenset({"5.ffn_out", "0.qkv"}))
    ('model.int8.onnx', 'model.int8-fp32-0.qkv-5.ffn_out.onnx')
    >>> int8_file_name(frozenset(), per_channel=True), int8_file_name(frozenset(), True, True)
    ('model.int8-pc.onnx', 'model.int8-pc-r7.onnx')
    """
    name = "model.int8" + ("-pc" if per_channel else "") + ("-r7" if reduce_range else "")
    return f"{name}.onnx" if not keep else f"{name}-fp32-{'-'.join(sorted(keep))}.onnx"


def cached_int8_onnx(
    fp32: Path, keep: frozenset[str] = frozenset(), per_channel: bool = False, reduce_range: bool = False
) -> Path:
    """``fp32`` with its weights quantised to int8 (ONNX Runtime's ``quantize_dynamic``: MatMul and
    the fused Attention become MatMulInteger and QAttention, activations quantised per batch), built
    once beside it (``embedding.quantize: int8``; RESULTS.md#first-answer-on-a-big-repository).
    ``keep``: the products left fp32: ``"<layer>.<part>"`` (a part of :data:`INT8_PARTS`), a whole
    ``"<layer>"`` or a part in every layer (``{"0", "ffn_out"}``: ``embedding.quantize: int8-mixed``;
    RESULTS.md#int8-by-layer). ``per_channel``: a weight scale per output column, not one per
    matrix; ``reduce_range``: 7-bit weights, which a CPU without VNNI multiplies without saturating
    (RESULTS.md#e5-int8-by-layer)."""
    name = int8_file_name(keep, per_channel, reduce_range)  # model.onnx -> model.int8...onnx
    target = fp32.with_name(fp32.stem + name.removeprefix("model"))
    if target.is_file():
        return target
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    parts = named_int8_parts(model)
    excluded = [name for name, part in parts.items() if keep & {part, *part.split(".")}]
    fd, temp = tempfile.mkstemp(prefix=".model-", suffix=".int8.onnx.tmp", dir=fp32.parent)
    os.close(fd)
    try:  # the fused kernels defeat shape inference: their outputs are float
        quantize_dynamic(
            model,
            temp,
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            reduce_range=reduce_range,
            nodes_to_exclude=excluded,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def cached_bert_onnx(model_dir: Path, key: str) -> Path:
    """The fp32 ONNX file of the BERT in ``model_dir`` (``model.safetensors`` + ``config.json``),
    built on first use into the model cache under ``key``; later calls only stat the file."""
    weights_file = model_dir / "model.safetensors"
    stamp = f"{weights_file.stat().st_size}-g{GRAPH_VERSION}"
    target = model_cache_dir() / key / stamp / "model.onnx"
    if target.is_file():
        return target
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    write_model(bert_graph(load_file(str(weights_file)), config), target)
    return target


def write_model(proto: Any, target: Path) -> None:
    """``proto`` serialised to ``target`` atomically (a temp file renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".model-", suffix=".onnx.tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(proto.SerializeToString())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)  # atomic: a concurrent builder's rename leaves an equal whole file
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
