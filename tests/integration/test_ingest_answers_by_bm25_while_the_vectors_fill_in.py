"""A BM25-first ingest (``ingest.publish_bm25_first``, ``ingest/fill.py``) answers before its
vectors are in: a query in each of its states is answered from what is built and says what the
dense index lacks; kill -9 in each state loses nothing and the next ingest carries on embedding."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fake_settings import FAKE, child_env, fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.indices.build import validate_build
from hybrid_rag.indices.coverage import dense_status
from hybrid_rag.indices.versions import IndexVersions
from hybrid_rag.models.embedders import FAKE_WINDOW_WORDS, FakeEmbedder
from hybrid_rag.settings import Settings

pytestmark = pytest.mark.integration  # the whole module

BATCH = 4
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "rotor",
    "wing",
    "flow",
    "shock",
    "heat",
    "boundary",
    "layer",
    "laminar",
    "turbulent",
]
OVERRIDES = {
    **FAKE,
    "ingest.batch_chunks": BATCH,
    "ingest.bm25_first_min_bytes": 0,
    "ingest.publish_every_seconds": 0.0001,  # a partial version after every batch
}


def _settings(data: Path, **more: object) -> Settings:
    return fake_settings(data, {**OVERRIDES, **more})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 files of 2 chunks each (16 texts: 4 batches)."""
    root = tmp_path_factory.mktemp("bm25first") / "corpus"
    root.mkdir()
    rng = random.Random(7)
    for i in range(8):
        lines = [" ".join(rng.choices(WORDS, k=12)) + f" doc{i}line{j}" for j in range(60)]
        (root / f"doc{i}.md").write_text(f"# document {i}\n\n" + "\n".join(lines) + "\n")
    return root


class Probing(FakeEmbedder):
    """Runs ``probe`` (a query from another engine on the same data dir) before each batch."""

    def __init__(self, probe, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.probe = probe

    def embed_passage_windows(self, texts):  # type: ignore[no-untyped-def]
        self.probe()
        return super().embed_passage_windows(texts)


def test_dense_status_says_how_much_is_embedded() -> None:
    assert dense_status({"chunks": 200, "dense_chunks": 83}) == "building, 41%"
    assert dense_status({"chunks": 200, "dense_chunks": 199}) == "building, 99%"
    assert dense_status({"chunks": 200, "dense_chunks": 200}) == ""
    assert dense_status({"chunks": 200}) == ""  # a version from before the key
    assert dense_status({"chunks": 0, "dense_chunks": 0}) == ""


def test_queries_during_the_ingest_answer_by_bm25_and_say_dense_is_building(
    tmp_path: Path, corpus: Path
) -> None:
    data = tmp_path / "data"
    seen: list[dict] = []

    def probe() -> None:
        reader = Engine(_settings(data))
        try:
            for mode in ("hybrid", "bm25", "dense"):
                result = reader.query("rotor wing doc3line5", mode=mode, top_k=5)
                seen.append({"mode": mode, "n": len(result.chunks), **result.to_dict()})
        finally:
            reader.close()

    engine = Engine(_settings(data), embedder=Probing(probe, dimension=256, window_words=FAKE_WINDOW_WORDS))
    try:
        report = engine.ingest([corpus])
        assert report.partial_versions >= 2 and report.embedded == 16
        statuses = [row["dense"] for row in seen if row["mode"] == "hybrid"]
        assert statuses[0] == "building, 0%"  # the first batch: BM25 only
        assert all(s.startswith("building, ") for s in statuses)
        assert len({*statuses}) >= 3  # the share grows as partial versions go live
        for row in seen:
            assert row["trace"]["dense"] == row["dense"]
            assert any(n.startswith("dense: building") for n in row["trace"]["notes"])
            if row["mode"] != "dense":  # the chunk BM25 finds by its own words, before its vector
                assert row["n"] > 0 and "doc3line5" in row["results"][0]["text"]
        first_dense = next(row for row in seen if row["mode"] == "dense")
        assert first_dense["n"] == 0  # nothing embedded yet: dense alone finds nothing, and says why
        # the finished index: complete, no partial version left, nothing to say
        final = engine.query("rotor wing doc3line5", top_k=5)
        assert "dense" not in final.to_dict() and final.trace.dense == ""
        assert "dense" not in final.to_dict()["trace"]
        kept = IndexVersions(data / "indices")
        assert all(dense_status(kept.manifest(v)) == "" for v in kept.versions())
        live = engine.indices.get()
        assert set(live.dense.ids().tolist()) == set(engine.store.all_chunk_ids().tolist())
    finally:
        engine.close()


def test_the_flag_off_and_a_small_ingest_publish_one_complete_version(tmp_path: Path, corpus: Path) -> None:
    for name, more, per_call in (
        ("off", {"ingest.publish_bm25_first": False}, None),
        ("per-call", {}, False),
        ("small", {"ingest.bm25_first_min_bytes": 10**9}, None),
    ):
        engine = Engine(_settings(tmp_path / name, **more))
        try:
            report = engine.ingest([corpus], bm25_first=per_call)
            assert report.partial_versions == 0 and report.build is not None
            assert [v["version"] for v in engine.versions()] == [1], name
        finally:
            engine.close()


def test_a_partial_build_validates_only_what_it_holds(tmp_path: Path, corpus: Path) -> None:
    engine = Engine(_settings(tmp_path / "data"))
    try:
        engine.ingest([corpus])
        live = engine.indices.get()
        ids = engine.store.all_chunk_ids()
        picks = list(engine.store.chunks([int(i) for i in ids[:3]]).values())
        half = type(live.dense).create(256, "fake-hash", type(live.dense.inner))  # an empty windowed index
        validate_build(half, live.bm25, ids, picks, partial=True)  # nothing embedded yet: fine
        with pytest.raises(Exception, match="store has"):
            validate_build(half, live.bm25, ids, picks)  # a complete build must hold every chunk
        with pytest.raises(Exception, match="store has"):
            validate_build(half, live.bm25, np.array([], dtype=np.int64), [], partial=True)
    finally:
        engine.close()


# -- kill -9 in each state --------------------------------------------------------------------

DRIVER = textwrap.dedent(
    """\
    import sys
    from hybrid_rag.engine import Engine
    from fake_settings import fake_settings

    data, corpus = sys.argv[1:3]
    settings = fake_settings(data, {**OVERRIDES})
    engine = Engine(settings)

    def progress(stage, done, total):
        print(f"{stage} {done}/{total}", flush=True)

    report = engine.ingest([corpus], progress=progress)
    print(f"done {report.embedded}", flush=True)
    """
).replace("**OVERRIDES", repr(OVERRIDES)[1:-1])

# the moment of the kill: the first progress line starting with this (files are stored and
# committed in "chunks" steps, "searchable" is a version going live, "embed" a batch committed)
STATES = {
    "storing the files": "chunks 4/",
    "bm25 version live, nothing embedded": "searchable 0/",
    "half embedded, a partial version live": "searchable 8/",
    "every vector in, the final build": "index 0/",
}


def _stored(data: Path) -> list[tuple]:
    with sqlite3.connect(data / "store.sqlite3") as db:
        return db.execute(
            "SELECT d.path, c.start_line, c.sha256 FROM chunks c JOIN documents d ON c.document_id = d.id "
            "ORDER BY d.path, c.position"
        ).fetchall()


def _drive(script: Path, data: Path, corpus: Path, kill_at: str | None) -> list[str]:
    env = child_env()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data), str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.strip())
        if kill_at is not None and line.startswith(kill_at):
            proc.send_signal(signal.SIGKILL)
            break
    lines += [line.strip() for line in proc.stdout]
    proc.wait(timeout=120)
    if kill_at is None:
        assert proc.returncode == 0 and lines[-1].startswith("done"), proc.stderr.read()[-2000:]  # type: ignore[union-attr]
    else:
        assert proc.returncode == -9, f"not killed at {kill_at!r}: {lines}"
    return lines


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> list[tuple]:
    """The store's rows after the same ingest without BM25 first."""
    data = tmp_path_factory.mktemp("reference")
    reference = Engine(_settings(data, **{"ingest.publish_bm25_first": False}))
    reference.ingest([corpus])
    reference.close()
    return _stored(data)


@pytest.mark.integration
@pytest.mark.parametrize("state", list(STATES))
def test_a_kill_in_each_state_loses_nothing_and_the_next_ingest_carries_on(
    tmp_path: Path, corpus: Path, expected: list[tuple], state: str
) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    data = tmp_path / "data"

    _drive(script, data, corpus, STATES[state])
    engine = Engine(_settings(data))
    try:  # whatever went live answers, and says what it lacks
        if IndexVersions(data / "indices").current() is not None:
            result = engine.query("rotor wing doc3line5", top_k=3)
            assert result.chunks
            live = engine.indices.get()
            assert result.trace.dense == dense_status(live.manifest)
    finally:
        engine.close()

    again = _drive(script, data, corpus, None)
    assert _stored(data) == expected  # no chunk lost, none twice
    if state != "storing the files":
        assert not any(line.startswith("chunks") for line in again)  # nothing read and stored again
    engine = Engine(_settings(data))
    try:
        live = engine.indices.get()
        assert live.dense_status == ""
        assert set(live.dense.ids().tolist()) == set(engine.store.all_chunk_ids().tolist())
        assert not engine.query("rotor wing doc3line5").trace.dense
    finally:
        engine.close()


def test_the_cli_says_when_bm25_answers_and_what_dense_lacks(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from hybrid_rag.cli import main

    home = tmp_path / "home"
    for key, value in {**OVERRIDES, "paths.data_dir": str(home)}.items():
        monkeypatch.setenv("HYBRID_RAG_" + key.upper().replace(".", "__"), str(value))
    engine = Engine(_settings(home))
    searchable: list[int] = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "searchable":
            searchable.append(done)

    try:  # stopped (Ctrl-C) once the BM25 version is live: the vectors are still to come
        report = engine.ingest([corpus], progress=progress, stop=lambda: bool(searchable))
        assert report.interrupted and report.build is not None and searchable == [0]
    finally:
        engine.close()
    assert main(["query", "rotor wing doc3line5"]) == 0
    out = capsys.readouterr().out
    assert "(dense building, 0%: BM25 only for the rest)" in out.splitlines()[0]
    assert "[1] doc3.md:1-" in out  # the chunk with the words, found by BM25
    assert main(["ingest", str(corpus)]) == 0  # carries on embedding, then the complete version
    capsys.readouterr()
    assert main(["query", "--json", "rotor wing doc3line5"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert "dense" not in answer and answer["results"]
    assert main(["--data-dir", str(tmp_path / "fresh"), "ingest", "--progress", str(corpus)]) == 0
    assert "searchable now: BM25 over 16 chunks, dense 0 of them" in capsys.readouterr().err


def test_stats_after_a_stopped_bm25_first_ingest_reports_and_embeds_nothing(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `stats` published the store's present here: it embedded every chunk (324 s on the probe's
    # folder, no progress, the writer lock held); a read never writes, and says where things stand
    from hybrid_rag.cli import main

    home = tmp_path / "home"
    for key, value in {**OVERRIDES, "paths.data_dir": str(home)}.items():
        monkeypatch.setenv("HYBRID_RAG_" + key.upper().replace(".", "__"), str(value))
    engine = Engine(_settings(home))
    searchable: list[int] = []
    try:
        report = engine.ingest(
            [corpus],
            progress=lambda s, d, t: searchable.append(d) if s == "searchable" else None,
            stop=lambda: bool(searchable),
        )
        assert report.interrupted and report.build is not None
    finally:
        engine.close()
    versions = sorted(p.name for p in (home / "indices").iterdir())
    embedded: list[int] = []
    real = FakeEmbedder.embed_passage_windows
    monkeypatch.setattr(
        FakeEmbedder,
        "embed_passage_windows",
        lambda self, texts: embedded.append(len(texts)) or real(self, texts),
    )
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert embedded == [] and sorted(p.name for p in (home / "indices").iterdir()) == versions
    assert stats["index_behind_store"] and "dense building, 0%" in stats["behind"]
    assert "the next `hybrid-rag ingest` carries on embedding" in stats["behind"]
    assert main(["ingest", str(corpus)]) == 0  # carries on: the complete version
    assert sum(embedded) == 16
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    assert not json.loads(capsys.readouterr().out)["index_behind_store"]
