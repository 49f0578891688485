"""A BERT encoder as an ONNX graph, built from safetensors weights with ``onnx.helper`` (no torch).

The packaged default embedder (all-MiniLM-L6-v2) ships as ``model.safetensors``; ONNX Runtime
needs a graph. :func:`bert_graph` writes the encoder of a Hugging Face ``BertModel`` (absolute
positions, post-layer-norm, exact erf GELU) in fp32, output ``last_hidden_state`` [batch, seq,
hidden]; pooling happens outside the graph. :func:`cached_bert_onnx` builds it once into the
model cache (``HYBRID_RAG_MODEL_CACHE``, else ``~/.cache/hybrid-rag/models``), atomically: a temp
file renamed into place, so two processes that build at once both end with a whole file.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

GRAPH_VERSION = 2  # bump when the graph changes: the cache key includes it
OPSET = 17  # LayerNormalization
_MASKED = -1.0e9  # added to the attention score of a padding token (softmax weight 0)


def model_cache_dir() -> Path:
    """Where built model files live: ``HYBRID_RAG_MODEL_CACHE`` or ``~/.cache/hybrid-rag/models``."""
    env = os.environ.get("HYBRID_RAG_MODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hybrid-rag" / "models"


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

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        from onnx import helper

        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, weights: dict[str, np.ndarray], name: str) -> str:
        """x @ W.T + b for the torch ``nn.Linear`` called ``name``."""
        w = self.const(f"{name}.weight_t", weights[f"{name}.weight"].astype(np.float32).T)
        b = self.const(f"{name}.bias", weights[f"{name}.bias"].astype(np.float32))
        return self.op("Add", self.op("MatMul", x, w), b)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], name: str, eps: float) -> str:
        scale = self.const(f"{name}.weight", weights[f"{name}.weight"].astype(np.float32))
        bias = self.const(f"{name}.bias", weights[f"{name}.bias"].astype(np.float32))
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def bert_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Any:
    """The ONNX ``ModelProto`` of a BERT encoder: inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids`` (int64 [batch, seq]); output ``last_hidden_state`` (float32)."""
    from onnx import TensorProto, helper

    w = _strip_prefix(weights)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
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
            g.op(
                "Gather",
                g.const("word", w["embeddings.word_embeddings.weight"].astype(np.float32)),
                "input_ids",
            ),
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
    # (1 - mask) * -1e9, shaped [batch, 1, 1, seq] to broadcast over heads and query positions
    keep = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = g.op(
        "Mul",
        g.op("Sub", g.const("one_f", np.array(1.0, np.float32)), keep),
        g.const("masked", np.array(_MASKED, np.float32)),
    )
    bias = g.op("Unsqueeze", bias, g.const("axes_1_2", np.array([1, 2], np.int64)))
    split_shape = g.const("split_shape", np.array([0, 0, heads, head_dim], np.int64))
    merge_shape = g.const("merge_shape", np.array([0, 0, hidden], np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    half, root2 = (
        g.const("half", np.array(0.5, np.float32)),
        g.const("root2", np.array(math.sqrt(2.0), np.float32)),
    )
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"

        def heads_of(name: str, perm: list[int], x_in: str = x, prefix: str = p) -> str:
            return g.op(
                "Transpose",
                g.op("Reshape", g.linear(x_in, w, f"{prefix}.attention.self.{name}"), split_shape),
                perm=perm,
            )

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_shape)
        attended = g.op("Add", g.linear(context, w, f"{p}.attention.output.dense"), x)
        attended = g.layer_norm(attended, w, f"{p}.attention.output.LayerNorm", eps)
        inner = g.linear(attended, w, f"{p}.intermediate.dense")
        gelu = g.op(
            "Mul",
            g.op("Mul", inner, half),
            g.op(
                "Add", g.const(f"one_{i}", np.array(1.0, np.float32)), g.op("Erf", g.op("Div", inner, root2))
            ),
        )
        out = g.op("Add", g.linear(gelu, w, f"{p}.output.dense"), attended)
        x = g.layer_norm(out, w, f"{p}.output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ids = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden])
    graph = helper.make_graph(g.nodes, "bert", ids, [output], initializer=g.inits)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hybrid-rag"
    )


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
    proto = bert_graph(load_file(str(weights_file)), config)
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
    return target
