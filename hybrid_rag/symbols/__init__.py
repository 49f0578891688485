"""The symbol index: every definition of the code corpus (name, kind, qualified name, signature,
lines, doc comment's first sentence), looked up by name and used in ranking (``ranking.py``)."""

from hybrid_rag.symbols.model import Symbol, SymbolMatch, SymbolSpan

__all__ = ["Symbol", "SymbolMatch", "SymbolSpan"]
