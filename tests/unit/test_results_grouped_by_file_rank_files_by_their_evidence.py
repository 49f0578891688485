"""``group="file"`` (retrieval/grouping.py): files ranked by their units' evidence, each with its best
units, ``top_k`` counting files; ``retrieval.group_units_by_file`` keeps the chunk list's chunks and
moves a file's units together; a bad ``group`` or ``units_per_file`` is an InputError."""

from __future__ import annotations

import pytest
from engine_fixtures import engine_over
from grouped_corpus import QUESTION, write_repository

from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.retrieval.grouping import file_score, files_of, units_together
from hybrid_rag.types import Chunk, ScoredChunk, SourceType


def _scored(chunk_id: int, document_id: int, score: float) -> ScoredChunk:
    chunk = Chunk(
        chunk_id,
        document_id,
        f"f{document_id}.py",
        0,
        chunk_id,
        chunk_id,
        "x",
        1,
        "",
        SourceType.CODE,
        "python",
        "d",
    )
    return ScoredChunk(chunk, score)


def test_a_file_scores_its_best_unit_plus_a_decayed_share_of_the_others() -> None:
    assert file_score([0.5]) == 0.5
    assert file_score([0.2, 1.0, 0.6]) == pytest.approx(1.0 + 0.5 * 0.6 + 0.25 * 0.2)
    assert file_score([1.0, -3.0]) == 1.0  # a weak unit takes nothing away


def test_two_good_units_outrank_one_slightly_better_unit() -> None:
    chunks = [
        _scored(1, 1, 1.0),
        _scored(2, 2, 0.9),
        _scored(3, 2, 0.8),
        _scored(4, 2, 0.1),
        _scored(5, 3, 0.2),
    ]
    files = files_of(chunks, units_per_file=2)
    assert [f.document_id for f in files] == [2, 1, 3]
    assert [u.id for u in files[0].units] == [2, 3]  # its best two, best first


def test_units_together_keeps_the_chunks_and_moves_a_files_units_up_to_its_first() -> None:
    chunks = [
        _scored(1, 1, 0.9),
        _scored(2, 2, 0.8),
        _scored(3, 1, 0.7),
        _scored(4, 3, 0.6),
        _scored(5, 2, 0.5),
    ]
    assert [c.id for c in units_together(chunks)] == [1, 3, 2, 5, 4]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    with engine_over(write_repository(tmp_path_factory.mktemp("grouped") / "repo")) as eng:
        yield eng


def test_files_are_ranked_with_their_best_units_and_top_k_counts_files(engine: Engine) -> None:
    chunks = engine.query(QUESTION, top_k=5)
    assert {c.path for c in chunks.chunks} == {"src/pool.py"}  # one long file fills the chunk list
    assert chunks.files is None and "files" not in chunks.to_dict()
    result = engine.query(QUESTION, top_k=3, group="file")
    assert result.files is not None and len(result.files) == 3
    paths = [f.path for f in result.files]
    assert paths[0] == "src/pool.py" and len(set(paths)) == 3
    for f in result.files:
        assert 1 <= len(f.units) <= 3 and {u.path for u in f.units} == {f.path}
        assert [u.score for u in f.units] == sorted((u.score for u in f.units), reverse=True)
    assert [f.score for f in result.files] == sorted((f.score for f in result.files), reverse=True)
    assert [c.id for c in result.chunks] == [u.id for f in result.files for u in f.units]
    shown = result.to_dict()["files"][0]
    assert shown["path"] == "src/pool.py" and len(shown["units"]) == 3
    unit = shown["units"][0]
    assert unit["citation"] == f"src/pool.py:{unit['start_line']}-{unit['end_line']}" and "match" in unit
    one = engine.query(QUESTION, top_k=2, group="file", units_per_file=1)
    assert [len(f.units) for f in one.files] == [1, 1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group": "folder"}, "group: 'folder' is not one of chunk, file"),
        ({"group": "file", "units_per_file": 0}, "units_per_file: 0 must be"),
        ({"group": "file", "units_per_file": "2"}, "units_per_file: '2' must be"),
    ],
)
def test_a_bad_group_is_refused_naming_it(engine: Engine, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        engine.query(QUESTION, **kwargs)


def test_the_grouped_chunk_list_holds_the_same_chunks_with_a_files_units_together(engine: Engine) -> None:
    plain = engine.query("pool cache retry handling", top_k=8)
    settings = engine.settings.with_overrides({"retrieval.group_units_by_file": True})
    together = Engine(settings)
    try:
        grouped = together.query("pool cache retry handling", top_k=8)
    finally:
        together.close()

    def runs(result: object) -> list[str]:
        paths = [c.path for c in result.chunks]  # type: ignore[attr-defined]
        return [p for i, p in enumerate(paths) if i == 0 or paths[i - 1] != p]

    assert len(runs(plain)) > len(set(runs(plain)))  # a file's units apart in the plain list
    assert sorted(c.id for c in grouped.chunks) == sorted(c.id for c in plain.chunks)
    assert len(runs(grouped)) == len(set(runs(grouped)))  # each file's units in one run
    assert runs(grouped)[0] == plain.chunks[0].path  # at its best unit's place


def test_the_cli_offers_the_groups_the_engine_takes() -> None:
    from hybrid_rag.cli import files as cli_files
    from hybrid_rag.retrieval import grouping

    assert cli_files.GROUPS == grouping.GROUPS  # kept apart so the CLI starts without the engine
