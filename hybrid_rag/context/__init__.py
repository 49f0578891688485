"""From retrieval results to a cited, budgeted context and an answer prompt (the self-check that
retries weak retrievals is ``context/selfcheck.py``).

Nothing is loaded at import: the embed function and the generator are passed in.
"""

from hybrid_rag.context.builder import ContextBuilder, cached_embed
from hybrid_rag.context.fragments import fragment_cuts
from hybrid_rag.context.prompt import build_prompt, cited_ids
from hybrid_rag.context.render import Context, Quote, Source, Topic

__all__ = [
    "Context",
    "ContextBuilder",
    "Quote",
    "Source",
    "Topic",
    "build_prompt",
    "cached_embed",
    "cited_ids",
    "fragment_cuts",
]
