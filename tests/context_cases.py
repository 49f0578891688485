"""Hand-made retrieval results for the context and self-check tests (shared by the files split from
one context test file): a scored chunk whose text is lines 1.. of its file, a result of such chunks,
an Engine with ``root`` ingested, and the query log it wrote."""

from __future__ import annotations

import json
from pathlib import Path

from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.tokens import count_tokens
from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, StageTiming, Trace

EMBED = FakeEmbedder(dimension=32).embed_passages

# two topics that share no word: a result of both clusters into two
REACTOR = "alpha beta gamma delta reactor coolant pressure valve"
VIOLIN = "violin sonata orchestra concerto melody rhythm tempo"


def scored_chunk(
    cid: int, text: str, score: float = 1.0, dense: float = 0.5, *, path: str = "", code: bool = False
) -> ScoredChunk:
    """Chunk ``cid``: ``text`` as lines 1.. of ``path``, scored ``score``, dense cosine ``dense``."""
    kind, language = (SourceType.CODE, "python") if code else (SourceType.TEXT, "text")
    chunk = Chunk(
        cid, cid, path or f"d{cid}.txt", 0, 1, 1 + text.count("\n"), text, count_tokens(text),
        f"{cid:064x}", kind, language, "c",
    )  # fmt: skip
    return ScoredChunk(chunk, score, {"dense": dense})


def query_result(query: str, *chunks: ScoredChunk) -> QueryResult:
    """A hybrid result of ``chunks`` whose trace times one dense stage."""
    return QueryResult(query, "hybrid", chunks, Trace((StageTiming("dense", 0.001),)))


def ingested(tmp_path: Path, root: Path, **overrides: object) -> Engine:
    """An Engine with the fake embedder under ``tmp_path``, settings ``overrides``, ``root`` ingested."""
    engine = Engine(fake_settings(tmp_path / "data", overrides))
    engine.ingest([root])
    return engine


def query_log(engine: Engine) -> list[dict]:
    """Every record of ``engine``'s query log, oldest first."""
    return [json.loads(line) for line in engine.querylog.path.read_text().splitlines()]
