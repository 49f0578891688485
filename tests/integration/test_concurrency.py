"""Queries from several threads while incremental ingests run: every answer is consistent."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine

pytestmark = pytest.mark.integration  # the whole module


@pytest.mark.integration
def test_queries_during_incremental_ingest_are_consistent(settings, tmp_path: Path) -> None:
    corpus = tmp_path / "live-corpus"
    corpus.mkdir()
    for i in range(30):
        (corpus / f"note{i}.md").write_text(f"# note {i}\n\nrotor blade flutter note {i} version 0\n")
    writer = Engine(settings)
    writer.ingest([corpus])
    reader = Engine(settings)  # a second engine on the same data dir, as a serving process would be
    errors: list[BaseException] = []
    answers: list[int] = []
    versions_seen: set[int] = set()
    stop = threading.Event()

    def query_loop(engine: Engine) -> None:
        try:
            while not stop.is_set():
                result = engine.query("rotor blade flutter", top_k=5)
                assert result.chunks, "a query during ingest came back empty"
                for c in result.chunks:
                    # every answer carries its own row: the text is that file's text at some version
                    name = c.path.rsplit("/", 1)[-1].removesuffix(".md")
                    number = name.removeprefix("note").removeprefix("extra")
                    assert c.id > 0 and (f"note {number}" in c.text or f"extra {number}" in c.text), (
                        c.path,
                        c.text,
                    )
                versions_seen.add(result.index_version or 0)
                answers.append(len(result.chunks))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=query_loop, args=(e,)) for e in (reader, reader, writer)]
    for t in threads:
        t.start()
    try:
        for version in range(1, 5):
            for i in range(0, 30, 3):
                text = f"# note {i}\n\nrotor blade flutter note {i} version {version}\n"
                (corpus / f"note{i}.md").write_text(text)
            (corpus / f"extra{version}.md").write_text(f"rotor blade extra {version}\n")
            writer.ingest([corpus])
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[0]
    assert len(answers) > 10
    assert len(versions_seen) >= 2  # readers followed the new versions without a restart
    live = reader.indices.get()
    assert set(live.dense.ids().tolist()) == set(reader.store.all_chunk_ids().tolist())
    writer.close()
    reader.close()
