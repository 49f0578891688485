"""A filter on a converted document's place (page, slide, sheet...) matches every chunk that covers
the place, not only the chunk's first one: a deck of four short slides is one chunk (slides 1-4),
and ``slide=3`` finds it; ``page>=3`` finds a chunk over pages 1-4; ``sheet=Q2`` a chunk over
sheets Q1-Q2. ``meta.page`` stays the stored first page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import document_files as make
import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.engine import Engine
from hybrid_rag.filters import parse_filter
from hybrid_rag.indices.milvus.filters import to_milvus

QUERY = "soil plums rake"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    slides = [("Intro", "welcome", ""), ("Soil", "clay soil", ""), ("Water", "rain", ""), ("End", "bye", "")]
    files = {
        "deck.pptx": make.pptx(slides),
        "fruit.pdf": make.pdf(["one apple", "two pears", "three plums", "four figs"]),
        "costs.xlsx": make.xlsx(
            {"Q1": [["item", "cost"], ["shovel", 20]], "Q2": [["item", "cost"], ["rake", 30]]}
        ),
    }
    with engine_over(write_tree(tmp_path_factory.mktemp("places") / "docs", files)) as eng:
        yield eng


def names(engine: Engine, filters: object) -> set[str]:
    result = engine.query(QUERY, top_k=20, filters=filters, mode="bm25")
    return {Path(c.path).name for c in result.chunks}


def test_the_documents_are_one_chunk_each_spanning_their_places(engine: Engine) -> None:
    metas = {Path(c.path).name: c.chunk.meta for c in engine.query(QUERY, top_k=20, mode="bm25").chunks}
    assert (metas["deck.pptx"]["slide"], metas["deck.pptx"]["slide_end"]) == (1, 4)
    assert (metas["fruit.pdf"]["page"], metas["fruit.pdf"]["page_end"]) == (1, 4)
    assert (metas["costs.xlsx"]["sheet"], metas["costs.xlsx"]["sheet_end"]) == ("Q1", "Q2")


@pytest.mark.parametrize(
    ("expr", "found"),
    [
        ("slide=3", {"deck.pptx"}),
        ("slide in (3, 9)", {"deck.pptx"}),
        ("page>=3", {"fruit.pdf"}),
        ("page>3", {"fruit.pdf"}),
        ("page=2", {"fruit.pdf"}),
        ("page<=1", {"fruit.pdf"}),
        ("sheet=Q2", {"costs.xlsx"}),
        ("sheet~Q*", {"costs.xlsx"}),
        ("page>4", set()),
        ("slide=5", set()),
        ("sheet=Q3", set()),
        ("page!=2", set()),  # the one PDF chunk covers page 2
        ("page not in (2)", set()),
        ("page!=7", {"fruit.pdf"}),
        ("meta.page=2", set()),  # the stored first page, as written
        ("meta.page=1", {"fruit.pdf"}),
    ],
)
def test_a_place_filter_matches_the_chunks_that_cover_it(engine: Engine, expr: str, found: set[str]) -> None:
    assert names(engine, expr) == found


def test_a_mapping_filter_on_a_place_covers_it_too(engine: Engine) -> None:
    assert names(engine, {"slide": 3}) == {"deck.pptx"}
    assert names(engine, {"sheet": ["Q2"]}) == {"costs.xlsx"}


def test_milvus_compiles_the_rewritten_filter() -> None:
    compiled = to_milvus(parse_filter("page>=3"))
    assert compiled is not None and 'meta["page_end"]' in compiled
