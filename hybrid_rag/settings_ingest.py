"""The ingest sections of the settings: ``loading`` (what a walk reads), ``ingest`` (batches),
``watch``, ``archive``, ``convert`` and ``dedupe``; re-exported by ``settings.py``, where
``Settings`` gathers every section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hybrid_rag.settings_base import Float, Int, _Section

# a file's role by its path (``code/roles.py``: ``source`` is the implementation); a test keeps
# this list equal to ``code.roles.EMBED_ROLES``
EmbedRole = Literal[
    "source", "test", "example", "benchmark", "fixture", "vendored", "generated", "minified",
    "reexport", "prose", "config", "locale",
]  # fmt: skip


class LoadingSettings(_Section):
    ignore: tuple[str, ...] = (
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "env",
        ".env",
        "__pycache__",
        "node_modules",
        "build",
        "dist",
        "target",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".idea",
        ".vscode",
        "*.egg-info",
        ".ipynb_checkpoints",
        "data/indices",
    )
    use_gitignore: bool = True  # .hybridragignore (same syntax) is always read
    max_file_bytes: Int = Field(5_000_000, gt=0)
    # machine-generated data is skipped (each with its reason): lock files, minified assets,
    # and data files (.json .jsonl .csv .tsv .ndjson) larger than max_data_file_bytes
    skip_generated: bool = True
    max_data_file_bytes: Int = Field(32_000, gt=0)
    # symbolic links inside an ingested folder (ingest/symlinks.py): no, inside (the root), outside
    follow_symlinks: Literal["no", "inside", "outside"] = "no"


class IngestBatchSettings(_Section):
    """Streaming ingest (``ingest/stream.py``): new chunk texts are embedded and committed in
    batches of ``batch_chunks``; a batch bounds the window vectors held in memory, the work a kill
    loses, and how long Ctrl-C waits."""

    batch_chunks: Int = Field(64, gt=0)
    # search before the embeddings are done (ingest/fill.py, docs/first-run.md): when the files to
    # write hold at least bm25_first_min_bytes, or their embedding is estimated to take at least
    # bm25_first_min_seconds (ingest/bm25_first.py), they are stored first, a BM25-only version goes
    # live, then the embedding fills the dense index in, a version every publish_every_seconds
    publish_bm25_first: bool = True
    bm25_first_min_bytes: Int = Field(1_000_000, ge=0)
    bm25_first_min_seconds: float = Field(5.0, ge=0)
    publish_every_seconds: float = Field(120.0, ge=0)  # 0: no intermediate versions
    # BM25-first: the chunks' BM25 terms computed in other processes while the files are stored, so
    # the BM25-only version is built sooner (ingest/term_prefetch.py; off on one core)
    tokenize_ahead: bool = True
    # which chunks the fill embeds first (ingest/embed_order.py): by their file's role, in this
    # order (a role left out comes after the listed ones); the roles of embed_never are never
    # embedded by any build: found by BM25 only, and every answer says so
    embed_order: tuple[EmbedRole, ...] = (
        "source", "prose", "config", "reexport", "test", "example", "benchmark", "fixture",
        "locale", "vendored", "generated", "minified",
    )  # fmt: skip
    embed_never: tuple[EmbedRole, ...] = ()


class WatchSettings(_Section):
    """``hybrid-rag watch`` (``hybrid_rag/watch.py``): changes are gathered until none has come for
    ``debounce_ms``, then ingested together."""

    debounce_ms: Int = Field(500, gt=0, le=600_000)


class ArchiveSettings(_Section):
    """Limits for zip ingestion; an archive past any of them is refused whole."""

    max_members: Int = Field(20_000, gt=0)
    max_total_bytes: Int = Field(1_000_000_000, gt=0)  # uncompressed
    max_ratio: Float = Field(100.0, gt=1)  # uncompressed / compressed, per member and overall


class ConvertSettings(_Section):
    """Documents turned into text (``ingest/converters/``): PDF, DOCX, PPTX, HTML, notebooks, EPUB,
    CSV/TSV/XLSX. A file past a limit is skipped with the limit in its reason."""

    enabled: bool = True  # false: these formats are skipped as binary (.html/.ipynb/.csv read raw)
    max_file_bytes: Int = Field(100_000_000, gt=0)  # a document's size (text: loading.max_file_bytes)
    max_pages: Int = Field(5_000, gt=0)  # pages, slides, notebook cells or EPUB chapters
    max_rows: Int = Field(100_000, gt=0)  # spreadsheet rows, every sheet together
    max_text_chars: Int = Field(20_000_000, gt=0)  # the converted text
    max_unzipped_bytes: Int = Field(500_000_000, gt=0)  # DOCX/PPTX/XLSX/EPUB are zips: declared size
    max_ratio: Float = Field(100.0, gt=1)  # ... and their compression ratio (zip bombs)
    notebook_outputs: bool = False  # notebooks: code cells' text outputs too
    cache: bool = True  # converted text cached by content hash under <data_dir>/converted


class DedupeSettings(_Section):
    """Near-duplicate chunks (MinHash over word shingles) are stored once."""

    enabled: bool = True
    threshold: Float = Field(0.9, gt=0, le=1)  # estimated Jaccard similarity
    num_perm: Int = Field(128, gt=0)
    shingle_words: Int = Field(5, gt=0)
