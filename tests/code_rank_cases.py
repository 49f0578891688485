"""Scored chunks for the code-rank rules' unit tests (``retrieval/code_rank.py``)."""

from __future__ import annotations

from hybrid_rag.types import Chunk, ScoredChunk, SourceType

CODE_EXTENSIONS = (".py", ".go", ".rs", ".ts", ".js", ".java", ".rb", ".cs", ".swift")


def scored(path: str, score: float, *, chunk_id: int, text: str = "x = 1\n", start: int = 1) -> ScoredChunk:
    code = path.endswith(CODE_EXTENSIONS)
    chunk = Chunk(
        id=chunk_id,
        document_id=hash(path) % 10_000,
        path=path,
        position=start,
        start_line=start,
        end_line=start + text.count("\n"),
        text=text,
        token_count=len(text.split()),
        sha256=f"{chunk_id:064x}",
        source_type=SourceType.CODE if code else SourceType.TEXT,
        language="python" if code else "markdown",
        collection="default",
    )
    return ScoredChunk(chunk, score, {"fusion": score})


def ranked(*rows: tuple[str, float]) -> list[ScoredChunk]:
    """Scored chunks in the given order, ids 1, 2, ..."""
    return [scored(path, score, chunk_id=i, start=i * 10) for i, (path, score) in enumerate(rows, start=1)]
