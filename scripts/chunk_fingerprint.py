"""Every chunk, symbol and reference row an ingest writes for a folder, as sorted JSON lines.

Ingests ``ROOT`` into a fresh data dir with the fake embedder (no model loads) through the engine,
then reads the store's live rows: chunks ``(path, position, start, end, sha256, tokens, lang,
duplicate_of)``, symbols ``(path, position, name, kind, qualified name, signature, start, end, doc,
parent, the position of the chunk holding it)`` and references ``(path, name, kind, line,
qualifier, module, scope)``, paths relative to ``ROOT``. Two runs (before and after a change to
chunking or the definition finder) compare with ``diff``; ``--summary`` prints the row counts and
one digest a kind.

    python scripts/chunk_fingerprint.py ROOT OUT.jsonl [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from hybrid_rag import Engine
from hybrid_rag.settings import Settings

CHUNKS = """
SELECT d.path, c.position, c.start_line, c.end_line, c.sha256, c.token_count, c.lang, c.duplicate_of
FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.retired IS NULL"""
SYMBOLS = """
SELECT d.path, s.position, s.name, s.kind, s.qualified_name, s.signature, s.start_line, s.end_line,
       s.doc, s.parent, (SELECT c.position FROM chunks c WHERE c.id = s.chunk_id)
FROM symbols s JOIN documents d ON d.id = s.document_id WHERE d.retired IS NULL"""
REFERENCES = """
SELECT d.path, r.name, r.kind, r.line, r.qualifier, r.module, r.scope
FROM code_references r JOIN documents d ON d.id = r.document_id WHERE d.retired IS NULL"""


def rows(database: Path, root: str) -> list[str]:
    """The store's live rows as JSON lines, sorted, paths relative to ``root``."""
    out: list[str] = []
    with sqlite3.connect(database) as db:
        for kind, sql in (("chunk", CHUNKS), ("symbol", SYMBOLS), ("reference", REFERENCES)):
            for row in db.execute(sql):
                path = str(row[0])
                rel = path[len(root) + 1 :] if path.startswith(root + "/") else path
                out.append(json.dumps([kind, rel, *row[1:]], ensure_ascii=False))
    return sorted(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("root")
    parser.add_argument("out")
    parser.add_argument("--data-dir", help="a fresh folder for the store (default: a temporary one)")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    with tempfile.TemporaryDirectory(prefix="fingerprint-") as tmp:
        data_dir = Path(args.data_dir or tmp)
        settings = Settings().with_overrides({"paths.data_dir": str(data_dir), "embedding.model": "fake"})
        start = time.perf_counter()
        with Engine(settings) as engine:
            engine.ingest([root])
        seconds = time.perf_counter() - start
        lines = rows(data_dir / settings.paths.store_file, root.as_posix())
    Path(args.out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    counts: dict[str, int] = {}
    digests: dict[str, hashlib._Hash] = {}
    for line in lines:
        kind = json.loads(line)[0]
        counts[kind] = counts.get(kind, 0) + 1
        digests.setdefault(kind, hashlib.sha256()).update(line.encode())
    summary = {k: [counts[k], digests[k].hexdigest()[:16]] for k in sorted(counts)}
    print(json.dumps({"root": root.as_posix(), "ingest_seconds": round(seconds, 1), **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
