"""``retrieval.centrality_prior`` (off by default): PageRank over the files' reference graph
(``symbols/centrality.py``), computed once a store state, moves the results of an architecture
question up by their file's centrality; any other question, or the prior off, ranks as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from context_cases import ingested

from hybrid_rag.symbols.centrality import CENTRALITY, apply_centrality, is_architecture, page_rank
from hybrid_rag.types import Chunk, ScoredChunk, SourceType

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "references" / "python"
OVERVIEW = "give me an overview of how this package is organised"


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory):
    made = []
    for on in (False, True):
        tmp = tmp_path_factory.mktemp(f"centrality-{on}")
        root = tmp / "python"
        shutil.copytree(FIXTURES, root)
        made.append(ingested(tmp, root, **{"retrieval.centrality_prior": on}))
    yield made
    for engine in made:
        engine.close()


def test_the_file_everything_uses_is_the_most_central(engines) -> None:
    from hybrid_rag.symbols.centrality import file_ranks

    engine = engines[1]
    ranks = file_ranks(engine.store, engine.served_state())
    shown = {Path(p).name: r for p, r in ranks.items()}
    assert shown["pool.py"] == 1.0
    assert shown["app.py"] < shown["pool.py"]
    assert file_ranks(engine.store, engine.served_state()) is ranks  # once a state


def test_an_architecture_question_is_moved_by_centrality_and_others_are_not(engines) -> None:
    off, on = engines
    moved = on.query(OVERVIEW, top_k=10)
    assert any(CENTRALITY in c.breakdown for c in moved.chunks)
    assert "centrality" in [t.stage for t in moved.trace.timings]
    assert all(CENTRALITY not in c.breakdown for c in off.query(OVERVIEW, top_k=10).chunks)
    plain = "how does run use the pool?"
    assert [c.id for c in on.query(plain).chunks] == [c.id for c in off.query(plain).chunks]


@pytest.mark.parametrize(
    ("question", "architecture"),
    [
        ("How is the code organized?", True),
        ("What are the main components of this project?", True),
        ("give me a high-level overview of the architecture", True),
        ("Where does the program start?", True),
        ("How do I hide an option from the help listing?", False),
        ("what is the architecture of ConnectionPool.take?", False),  # names a definition
    ],
)
def test_architecture_questions(question: str, architecture: bool) -> None:
    assert is_architecture(question) is architecture


def chunk(cid: int, path: str, score: float) -> ScoredChunk:
    c = Chunk(cid, cid, path, 0, 1, 1, "x", 1, f"{cid:064x}", SourceType.CODE, "python", "c")
    return ScoredChunk(c, score, {})


def test_the_prior_moves_by_standard_deviations_of_the_scores() -> None:
    results = [chunk(1, "/r/leaf.py", 1.0), chunk(2, "/r/core.py", 0.9), chunk(3, "/r/other.py", 0.1)]
    ranked = apply_centrality(results, {"/r/core.py": 1.0, "/r/leaf.py": 0.1}, 1.0)
    assert [r.id for r in ranked] == [2, 1, 3]
    assert ranked[2].breakdown == {}
    assert apply_centrality(results, {"/r/core.py": 1.0}, 0.0) == results


def test_page_rank_scales_to_one_and_copes_without_edges() -> None:
    ranks = page_rank({("a", "b"): 1.0, ("c", "b"): 1.0}, ["a", "b", "c"])
    assert ranks["b"] == 1.0 and ranks["a"] < 1.0
    assert page_rank({}, ["a", "b"]) == {"a": 1.0, "b": 1.0}
