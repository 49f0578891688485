"""Hub chunks measured against questions (``indices/question_bank.py``): a bank of pseudo-questions
made from the corpus (definitions' docs, prose's first sentences) is embedded as queries when a
version is built; each chunk's radius is its mean cosine to its k nearest bank questions (not its
own); ``features.question_hubness`` ranks dense by ``2 cos - r``; a version without a bank ranks as
before and says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices import question_bank
from hybrid_rag.indices.hubness import chunk_vectors
from hybrid_rag.indices.question_bank import BETA, bank_texts, first_sentence, measure
from hybrid_rag.types import Chunk, SourceType

BANK = {"index__question_bank_size": 2000}  # off by default: the bank is built only when asked for


def unit_rows(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def chunk(cid: int, text: str, kind: SourceType = SourceType.TEXT) -> Chunk:
    return Chunk(cid, 1, "a.md", 0, 1, 1, text, 5, f"{cid:064x}", kind, "markdown", "default")


def test_the_bank_holds_docs_and_prose_first_sentences_once_each_and_no_code_text():
    docs = [("Parse one header line of the log.", 3), ("Parse one header line of the log.", 1), ("Short.", 2)]
    prose = [
        chunk(10, "# Install\n\nRun the installer from the command line. Then restart."),
        chunk(11, "def parse(line): return the parsed header line", SourceType.CODE),
    ]
    bank = bank_texts(docs, prose, size=10)
    assert sorted((q.text, q.chunk_id) for q in bank) == [
        ("Parse one header line of the log.", 1),  # the lowest chunk id keeps a repeated text
        ("Run the installer from the command line.", 10),  # the heading is no sentence
    ]
    assert first_sentence("Too short.") == ""


def test_the_bank_is_sampled_deterministically_to_its_size():
    docs = [(f"Handle request number {i} for the service.", i) for i in range(50)]
    small = bank_texts(docs, [], size=7)
    assert len(small) == 7
    assert [q.text for q in small] == [q.text for q in bank_texts(list(reversed(docs)), [], size=7)]
    assert {q.text for q in small} <= {q.text for q in bank_texts(docs, [], size=20)}


def test_a_chunk_s_radius_is_its_mean_cosine_to_its_k_nearest_questions_not_its_own():
    rows, bank = unit_rows(30), unit_rows(40, seed=1)
    ids = np.arange(100, 130, dtype=np.int64)
    sources = np.concatenate([ids[:20], ids[:20]])  # two questions from each of the first 20 chunks
    table = measure(ids, rows, bank, sources, k=5)
    sims = rows @ bank.T
    sims[sources[None, :] == ids[:, None]] = -np.inf
    expected = np.sort(sims, axis=1)[:, ::-1][:, :5].mean(axis=1)
    assert np.allclose(table.csls, expected, atol=1e-5)
    held = np.where(np.isfinite(sims), np.exp(BETA * sims), 0).sum(axis=1)
    assert np.allclose(table.softmax, 2 * np.log(held) / BETA, atol=1e-4)


def test_an_empty_bank_gives_every_chunk_radius_zero():
    table = measure(np.arange(3), unit_rows(3), np.zeros((0, 16), np.float32), np.zeros(0, np.int64), k=5)
    assert table.csls.tolist() == [0, 0, 0] and table.questions == 0


CODE = {
    f"src/mod{i}.py": f'def handler_{i}(value):\n    """Handle {word} requests for the {word} service."""\n'
    f"    return value * {i}\n"
    for i, word in enumerate(["billing", "shipping", "login", "search", "upload", "report"])
}
CODE["src/all.py"] = "def dispatch(value):\n    return value\n"
CODE["README.md"] = "# Service\n\nThe service routes billing and shipping requests to handlers.\n"


@pytest.fixture
def engine(tmp_path):
    with engine_over(write_tree(tmp_path / "repo", CODE), **BANK) as eng:
        yield eng


def live_folder(engine):
    versions = engine.indices.versions
    return versions.directory(versions.current()), versions.manifest(versions.current())


def test_a_build_writes_the_radii_beside_the_faiss_index_and_names_them_in_its_manifest(engine):
    folder, manifest = live_folder(engine)
    assert (folder / question_bank.FILE).is_file()
    entry = manifest["question_bank"]
    assert entry["chunks"] == manifest["dense_chunks"] and entry["k"] == 10
    assert entry["questions"] == 7  # six handlers' docs and the README's first sentence
    table = question_bank.load(folder, manifest)
    dense = engine.indices.get().dense
    docs = [(s.doc, s.chunk_id) for s in engine.store.symbols() if s.doc]
    chunks = engine.store.chunks([int(i) for i in table.ids])
    bank = bank_texts(docs, chunks.values(), 2000)
    vectors = engine.embedder.embed_queries([q.text for q in bank])  # embedded as queries
    sources = np.array([q.chunk_id for q in bank])
    full = measure(table.ids, chunk_vectors(dense, table.ids), vectors, sources, 10)
    assert np.allclose(table.csls, full.csls, atol=1e-5)


def test_a_rebuild_embeds_no_question_again(engine):
    engine.rebuild()
    _, manifest = live_folder(engine)
    assert manifest["question_bank"]["embedded"] == 0 and manifest["question_bank"]["questions"] == 7


DENSE_ONLY = dict.fromkeys(("expansion", "symbols", "path_roles", "path_match", "file_coherence"), False)


@pytest.mark.parametrize("form", ["csls", "softmax"])
def test_the_flag_ranks_dense_by_2cos_minus_the_question_radius_per_call(tmp_path, form):
    repo = write_tree(tmp_path / "repo", CODE)
    with engine_over(repo, retrieval__question_hubness_form=form, **BANK) as engine:
        q = "which handler deals with shipping requests"
        off = engine.query(q, mode="dense", top_k=8, features=DENSE_ONLY)
        on = engine.query(q, mode="dense", top_k=8, features={**DENSE_ONLY, "question_hubness": True})
        live = engine.indices.get()
        vector = engine.embedder.embed_queries([q])[0]
        ids = np.array([c.chunk.id for c in on.chunks])
        expected = 2 * live.dense.score(vector, ids) - live.questions.radii(form).of(ids)
        assert np.all(np.diff(expected) <= 1e-9)
        cos = live.dense.score(vector, np.array([c.chunk.id for c in off.chunks]))
        assert np.all(np.diff(cos) <= 1e-9)  # off: the cosine ranking
        assert not any("question_hubness" in n for n in on.trace.notes)


def test_a_version_without_a_bank_ranks_by_cosine_and_says_so(engine):
    folder, manifest = live_folder(engine)
    del manifest["question_bank"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / question_bank.FILE).unlink()
    engine.indices._live = None  # reload the version as written
    q = "which handler deals with shipping requests"
    on = engine.query(q, mode="dense", top_k=6, features={**DENSE_ONLY, "question_hubness": True})
    off = engine.query(q, mode="dense", top_k=6, features=DENSE_ONLY)
    assert [c.chunk.id for c in on.chunks] == [c.chunk.id for c in off.chunks]
    assert any("no question bank" in n for n in on.trace.notes)


def test_a_bank_the_manifest_names_that_is_damaged_is_a_corrupt_index(engine):
    folder, manifest = live_folder(engine)
    (folder / question_bank.FILE).write_bytes(b"not a table")
    with pytest.raises(CorruptIndexError, match="question bank"):
        question_bank.load(folder, manifest)
    (folder / question_bank.FILE).unlink()
    with pytest.raises(CorruptIndexError, match="missing"):
        question_bank.load(folder, manifest)


def test_no_bank_when_its_size_is_zero_or_past_the_chunk_cap(tmp_path):
    for over in ({"index__question_bank_size": 0}, {**BANK, "index__hubness_max_chunks": 2}):
        with engine_over(write_tree(tmp_path / "repo", CODE), **over) as eng:
            folder, manifest = live_folder(eng)
            assert "question_bank" not in manifest and not (folder / question_bank.FILE).exists()


def test_an_ingest_that_adds_a_documented_file_measures_the_bank_again(engine, tmp_path):
    body = 'def refund(order):\n    """Refund the whole order to its buyer."""\n    return 0\n'
    extra = {"src/extra.py": body}
    engine.ingest([write_tree(tmp_path / "repo", extra)])
    folder, manifest = live_folder(engine)
    table = question_bank.load(folder, manifest)
    assert manifest["question_bank"]["questions"] == 8 and manifest["question_bank"]["embedded"] == 1
    assert table.ids.tolist() == sorted(int(i) for i in engine.indices.get().dense.ids())


def test_a_chunk_near_every_question_is_demoted_below_the_one_a_question_asks_for(tmp_path):
    code = dict(CODE)  # a hub among questions: its doc holds every handler's words
    code["src/all.py"] = (
        "def dispatch(value):\n"
        '    """Handle billing shipping login search upload report requests for the service."""\n'
        "    return value\n"
    )
    with engine_over(write_tree(tmp_path / "repo", code), **BANK) as engine:
        live = engine.indices.get()
        ids = live.dense.ids()
        radius = live.questions.radii("csls")
        paths = {c.id: c.path for c in engine.store.chunks([int(i) for i in ids]).values()}
        hub = next(i for i in ids if paths[int(i)].endswith("all.py"))
        assert radius.of(np.array([hub]))[0] == max(radius.of(ids))  # the nearest to the bank
        changed = []
        for q in ("shipping requests", "login requests", "upload requests", "search requests", "billing"):
            vector = engine.embedder.embed_queries([q])[0]
            cos = live.dense.score(vector, ids)
            if list(np.argsort(-cos, kind="stable")) != list(
                np.argsort(-(2 * cos - radius.of(ids)), kind="stable")
            ):
                on = engine.query(
                    q, mode="dense", top_k=len(ids), features={**DENSE_ONLY, "question_hubness": True}
                )
                off = engine.query(q, mode="dense", top_k=len(ids), features=DENSE_ONLY)
                changed.append([c.chunk.id for c in on.chunks] != [c.chunk.id for c in off.chunks])
        assert changed and all(changed)
