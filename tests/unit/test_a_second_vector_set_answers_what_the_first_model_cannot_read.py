"""A second vector set (``indices/second_dense.py``): ``rebuild --second-model`` builds it from the
embedding cache beside ``dense.faiss``; a question the first model cannot read (Russian over
MiniLM's English index) is answered from it, BM25 skipped; an English question never touches it
(the same ranking, to the score). Later builds carry it; rollback, pruning and a damaged file
treat it as they treat ``dense.faiss``. Two fake embedders under the two models' names, of two
dimensions (a search of one set with the other's vector would fail)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_rag import cli
from hybrid_rag.engine import Engine
from hybrid_rag.errors import CorruptIndexError, InputError
from hybrid_rag.indices.second_dense import SECOND_DENSE
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"
RUSSIAN = "как сбросить пароль пользователя"
ENGLISH = "how do I reset a user's password"
FILES = {
    "operations.md": "# Password resets\n\nTo reset a user's password, open the admin console and press "
    "Reset password. The user gets an email with a link.",
    "backups.md": "# Backups\n\nThe database is backed up every night to the object store and kept for "
    "thirty days.",
    "deploy.md": "# Deploying\n\nThe service is deployed with docker compose; nginx sits in front of it.",
    "geometry.py": "def circle_area(radius):\n    return 3.14159 * radius * radius\n",
}


def second_fake(model: str) -> FakeEmbedder:
    return FakeEmbedder(32, model_name=model)


def folder(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in FILES.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    return docs


def make_engine(root: Path, **overrides: object) -> Engine:
    settings = Settings().with_overrides({"paths.data_dir": str(root / "data"), **overrides})
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name=MINILM))
    engine.second_embedders.make = second_fake
    return engine


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    eng = make_engine(tmp_path)
    eng.ingest([folder(tmp_path)])
    yield eng
    eng.close()


def ranking(result) -> list[tuple[int, float]]:
    return [(c.id, round(c.score, 9)) for c in result.chunks]


def stages(result) -> set[str]:
    return {t.stage for t in result.trace.timings}


def test_rebuild_builds_the_second_set_beside_the_first_from_the_cache(engine: Engine) -> None:
    report = engine.rebuild(second_model=E5)
    directory = engine.indices.versions.directory(report.version)
    manifest = engine.indices.versions.manifest(report.version)
    entry = manifest[SECOND_DENSE]
    assert entry["model"] == E5 and entry["chunks"] == manifest["dense_chunks"] == report.chunks
    assert entry["dimension"] == 32 and entry["embedded"] == report.chunks
    assert (directory / entry["folder"] / "dense.faiss").is_file()
    assert (directory / "dense.faiss").is_file()  # the first set is where it was
    shas = {c.sha256 for c in engine.store.iter_chunks()}
    assert engine.store.cached_shas(E5, shas) == shas  # the second model's vectors in the same cache
    again = engine.rebuild(second_model=E5)  # from the cache: nothing embedded again
    assert engine.indices.versions.manifest(again.version)[SECOND_DENSE]["embedded"] == 0
    assert engine.versions()[-1][SECOND_DENSE]["model"] == E5


def test_a_russian_question_is_answered_from_the_second_set_and_an_english_one_never(engine: Engine) -> None:
    english_before = engine.query(ENGLISH)
    russian_before = engine.query(RUSSIAN)
    assert russian_before.trace.unread and russian_before.trace.vectors == ""
    engine.rebuild(second_model=E5)

    russian = engine.query(RUSSIAN)
    assert russian.trace.vectors == E5 and russian.trace.unread == ""
    assert "bm25" not in stages(russian) and "dense" in stages(russian)
    assert any(n.startswith("BM25 skipped") for n in russian.trace.notes)
    assert any(f"the second vector set ({E5}) answered" in n for n in russian.trace.notes)
    assert russian.to_dict()["vectors"] == E5
    expected = second_fake(E5).embed_queries([RUSSIAN])[0]
    top = engine.indices.get().second.dense.search(expected, 1)[0]
    assert russian.chunks[0].id == top.id  # the second model's query vector over the second index

    english = engine.query(ENGLISH)
    assert english.trace.vectors == "" and "vectors" not in english.to_dict()
    assert ranking(english) == ranking(english_before)


def test_a_short_question_in_a_script_the_first_model_cannot_read_goes_to_the_second(engine: Engine) -> None:
    engine.rebuild(second_model=E5)
    result = engine.query("объясни код")
    assert result.lang == "und" and result.trace.vectors == E5 and result.trace.unread == ""


def test_bm25_alone_never_uses_the_second_set(engine: Engine) -> None:
    engine.rebuild(second_model=E5)
    result = engine.query(RUSSIAN, mode="bm25")
    assert result.trace.vectors == "" and result.trace.unread


def test_a_later_ingest_embeds_new_chunks_with_both_models(engine: Engine, tmp_path: Path) -> None:
    engine.rebuild(second_model=E5)
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "alerts.md").write_text(
        "# Alerts\n\nPager alerts go to the on-call engineer.\n", encoding="utf-8"
    )
    engine.ingest([extra])
    live = engine.indices.get()
    assert live.second is not None and len(live.second) == len(live.dense) == live.manifest["chunks"]
    shas = {c.sha256 for c in engine.store.iter_chunks()}
    assert engine.store.cached_shas(E5, shas) == shas
    assert live.manifest[SECOND_DENSE]["embedded"] == 1  # only the new chunk, carried otherwise


def test_rollback_serves_a_version_with_or_without_its_second_set(engine: Engine) -> None:
    first = engine.indices.versions.current()
    engine.rebuild(second_model=E5)
    second = engine.indices.versions.current()
    engine.rollback(first)
    assert engine.query(RUSSIAN).trace.unread  # a version without it: as before
    engine.rollback(second)
    assert engine.query(RUSSIAN).trace.vectors == E5


def test_a_damaged_second_set_refuses_the_rollback_like_a_damaged_dense_index(engine: Engine) -> None:
    first = engine.indices.versions.current()
    built = engine.rebuild(second_model=E5).version
    engine.rollback(first)
    directory = engine.indices.versions.directory(built)
    entry = engine.indices.versions.manifest(built)[SECOND_DENSE]
    path = directory / entry["folder"] / "dense.faiss"
    path.write_bytes(path.read_bytes()[:-8] + b"damaged!")
    with pytest.raises(CorruptIndexError, match="checksum"):
        engine.rollback(built)
    assert engine.indices.versions.current() == first


def test_pruning_an_old_version_deletes_its_second_set(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, **{"paths.keep_versions": 1})
    try:
        engine.ingest([folder(tmp_path)])
        old = engine.rebuild(second_model=E5).version
        engine.rebuild()  # keeps the live version's second set
        assert not engine.indices.versions.directory(old).exists()
        assert engine.indices.get().second is not None
    finally:
        engine.close()


def test_off_drops_it_and_the_index_model_is_refused(engine: Engine) -> None:
    engine.rebuild(second_model=E5)
    report = engine.rebuild(second_model="off")
    assert SECOND_DENSE not in engine.indices.versions.manifest(report.version)
    assert engine.indices.get().second is None
    with pytest.raises(InputError, match="is the index's own model"):
        engine.rebuild(second_model=MINILM)
    from hybrid_rag.indices.second_dense import check_second_model

    with pytest.raises(InputError, match="not on milvus"):
        check_second_model(E5, MINILM, "milvus")


def test_the_cli_builds_it_and_says_which_set_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("hybrid_rag.engine.make_embedder", lambda s: FakeEmbedder(64, model_name=MINILM))
    monkeypatch.setattr(
        "hybrid_rag.models.second.SecondEmbedders._make", lambda self, model: second_fake(model)
    )
    data = str(tmp_path / "data")
    assert cli.main(["--data-dir", data, "ingest", str(folder(tmp_path))]) == 0
    assert cli.main(["--data-dir", data, "rebuild", "--second-model", E5]) == 0
    assert f"second vector set: {E5}, 4 chunks, 4 embedded" in capsys.readouterr().out
    cli.main(["--data-dir", data, "query", RUSSIAN])
    out = capsys.readouterr().out
    assert f"# vectors: the second vector set ({E5})" in out and "# warning:" not in out
    cli.main(["--data-dir", data, "query", RUSSIAN, "--json"])
    assert json.loads(capsys.readouterr().out)["vectors"] == E5
    assert cli.main(["--data-dir", data, "stats"]) == 0  # stats names the live version's second set
    assert f"second set: {E5} (4 chunks)" in capsys.readouterr().out
    assert cli.main(["--data-dir", data, "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["second_vectors"] == {"model": E5, "chunks": 4}


def test_the_self_check_judges_such_a_question_by_the_second_set(engine: Engine) -> None:
    engine.rebuild(second_model=E5)
    ids = [c.id for c in engine.store.iter_chunks()]
    scores = engine.retriever.dense_scores(RUSSIAN, ids)
    live = engine.indices.get()
    expected = live.second.dense.score(second_fake(E5).embed_queries([RUSSIAN])[0], ids)
    assert scores.tolist() == expected.tolist()
    english = engine.retriever.dense_scores(ENGLISH, ids)
    assert (
        english.tolist()
        == live.dense.score(FakeEmbedder(64, model_name=MINILM).embed_queries([ENGLISH])[0], ids).tolist()
    )
    context, _ = engine.context(RUSSIAN)
    assert context.result.trace.vectors == E5
    assert f"found with the second vector set ({E5}): the index's model cannot read it" in context.render()


def test_a_question_bm25_reads_keeps_the_first_set_whatever_its_language(engine: Engine) -> None:
    """cosqa's English questions detected as another language: BM25 reads them (most of their words
    are the index's), so the first set answers them as before the second set existed."""
    before = engine.query(ENGLISH, lang="fr")
    engine.rebuild(second_model=E5)
    after = engine.query(ENGLISH, lang="fr")
    assert after.lang == "fr" and after.trace.vectors == "" and after.trace.unread == ""
    assert ranking(after) == ranking(before)


def test_the_context_reads_its_evidence_with_the_model_that_answered(engine: Engine) -> None:
    from hybrid_rag.context.selfcheck import cosine_range
    from hybrid_rag.second_job import answering_model, context_builder_for

    engine.rebuild(second_model=E5)
    assert answering_model(engine.retriever, RUSSIAN) == E5
    assert answering_model(engine.retriever, ENGLISH) == MINILM
    russian = engine.query(RUSSIAN)
    builder = context_builder_for(engine.context_builder, russian, engine.second_embedders, engine.store)
    assert builder is not engine.context_builder and builder.cosines() == cosine_range(E5)
    text = russian.chunks[0].text
    assert builder.embed([text]).tolist() == second_fake(E5).embed_passages([text]).tolist()
    english = engine.query(ENGLISH)
    assert context_builder_for(engine.context_builder, english, engine.second_embedders, engine.store) is (
        engine.context_builder
    )


def test_a_bm25_first_ingest_carries_the_second_set_through_its_partial_versions(tmp_path: Path) -> None:
    overrides = {
        "ingest.batch_chunks": 2,
        "ingest.bm25_first_min_bytes": 0,
        "ingest.publish_every_seconds": 0.0001,  # a partial version after every batch
    }
    engine = make_engine(tmp_path, **overrides)
    try:
        engine.ingest([folder(tmp_path)])
        engine.rebuild(second_model=E5)
        more = tmp_path / "more"
        more.mkdir()
        for n in range(8):
            (more / f"note{n}.md").write_text(
                f"# Note {n}\n\nThe runbook step number {n}.\n", encoding="utf-8"
            )
        builder, seen = engine.ingestor.builder, []
        build = builder.build

        def recording(**kwargs: object):
            report = build(**kwargs)
            seen.append(builder.versions.manifest(report.version))  # partial ones are pruned later
            return report

        builder.build = recording  # type: ignore[method-assign]
        engine.ingest([more])
        assert len(seen) >= 2 and any(m["dense_chunks"] < m["chunks"] for m in seen)  # partial ones
        for manifest in seen:
            assert manifest[SECOND_DENSE]["chunks"] <= manifest["dense_chunks"]
        last = seen[-1]
        assert last[SECOND_DENSE]["chunks"] == last["dense_chunks"] == last["chunks"] == 12
        assert engine.query(RUSSIAN).trace.vectors == E5
    finally:
        engine.close()
