"""From retrieval results to a cited, budgeted context, a self-check, and an answer prompt.

Nothing is loaded at import: the embed function and the generator are passed in.
"""

from hybrid_rag.context.builder import ContextBuilder, cached_embed
from hybrid_rag.context.fragments import fragment_cuts
from hybrid_rag.context.prompt import build_prompt, cited_ids
from hybrid_rag.context.render import Context, Quote, Source, Topic
from hybrid_rag.context.selfcheck import Attempt, Checked, SelfCheck, confidence

__all__ = [
    "Attempt",
    "Checked",
    "Context",
    "ContextBuilder",
    "Quote",
    "SelfCheck",
    "Source",
    "Topic",
    "build_prompt",
    "cached_embed",
    "cited_ids",
    "confidence",
    "fragment_cuts",
]
