"""``embedding.quantize: auto`` (opt-in; the default is ``none``, fp32): which precision
``embedding.model: auto``'s MiniLM runs at, and never one that would mix vectors or force a rebuild.

* a data dir whose live index was built: the precision its vectors were built with (read from the
  model name its manifest records: ``#int8-mixed``, ``#int8-smooth``, ``#int8`` or neither, fp32),
  so an index built at fp32 keeps its fp32 vectors and answers as before;
* else, for the packaged MiniLM on ONNX Runtime: ``int8-mixed`` (``AUTO_QUANTIZE``: every judged
  figure within noise of fp32, 1.4-1.65x the passages a second; RESULTS.md#ingest-levers);
* else (another model, torch, a model named in the config rather than chosen by ``auto``): none.

An explicit ``none``, ``int8``, ``int8-mixed`` or ``int8-smooth`` is what it says; a data dir built at another
precision then asks for ``hybrid-rag rebuild`` (``IndexMismatchError``), as before.
"""

from __future__ import annotations

from hybrid_rag.models.embedders import canonical_model_name
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings

AUTO = "auto"
AUTO_QUANTIZE = "int8-mixed"  # MiniLM's precision on a fresh data dir
_TAGS = (
    ("#int8-mixed", "int8-mixed"),
    ("#int8-smooth", "int8-smooth"),
    ("#int8", "int8"),
)


def precision_of(model_name: str) -> str:
    """The precision a vector set's model name says (``onnx_runtime.INT8_TAG``, ``MIXED_TAG``).

    >>> precision_of("sentence-transformers/all-MiniLM-L6-v2#int8-mixed#defs2"), precision_of("x#int8#defs2")
    ('int8-mixed', 'int8')
    >>> precision_of("sentence-transformers/all-MiniLM-L6-v2#defs2")
    'none'
    """
    parts = model_name.split("#")[1:]
    for tag, precision in _TAGS:
        if tag[1:] in parts:
            return precision
    return "none"


def chosen_precision(settings: EmbeddingSettings, model: str, recorded: str | None) -> tuple[str, str]:
    """``settings.quantize`` for ``model``, chosen by ``auto``, as (precision, why: "" when nothing
    needs saying). ``recorded``: the full model name the data dir's live index was built with, or
    None (no index yet)."""
    if settings.quantize != AUTO:
        return settings.quantize, ""
    if recorded is not None and canonical_model_name(recorded.split("#", 1)[0]) == canonical_model_name(
        model
    ):
        kept = precision_of(recorded)
        if kept == "none" and _takes_auto(settings, model):
            return kept, (
                "fp32, as this data dir's index was built (`HYBRID_RAG_EMBEDDING__QUANTIZE="
                f"{AUTO_QUANTIZE} hybrid-rag rebuild` re-embeds it at {AUTO_QUANTIZE}, 1.4x faster)"
            )
        return kept, ""
    if _takes_auto(settings, model):
        return AUTO_QUANTIZE, ""
    return "none", ""


def _takes_auto(settings: EmbeddingSettings, model: str) -> bool:
    same = canonical_model_name(model) == canonical_model_name(DEFAULT_EMBEDDING_MODEL)
    return same and settings.runtime == "onnx" and settings.provider == "local"


def resolved(quantize: str) -> str:
    """What the factory builds for ``quantize``: ``auto`` reaching it (a model named in the config,
    not chosen by ``embedding.model: auto``) is fp32."""
    return "none" if quantize == AUTO else quantize
