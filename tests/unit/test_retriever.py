import copy

import pytest

from hybrid_rag.errors import ConfigError, InputError, NoIndexError


@pytest.fixture
def ingested(ingested_corpus):
    """The shared corpus, ingested once for the module (conftest): these tests only ask questions."""
    return ingested_corpus


def test_query_before_ingest_says_how_to_fix_it(engine):
    with pytest.raises(NoIndexError, match="hybrid-rag ingest PATH"):
        engine.query("anything")


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_each_mode_finds_the_function_by_its_words(ingested, mode):
    result = ingested.query("parse config file into a dictionary", mode=mode, top_k=3)
    assert result.mode == mode
    top = result.chunks[0]
    assert top.path.endswith("geometry.py")
    assert top.start_line <= 11 <= top.end_line  # def parse_config_file is on line 11
    stages = {t.stage for t in result.trace.timings}
    assert {"fuse", "fetch"} <= stages
    assert ("dense" in stages) == (mode != "bm25") and ("bm25" in stages) == (mode != "dense")


def test_hybrid_breakdown_keeps_each_lists_rank_and_score(ingested):
    result = ingested.query("compost soil drainage", top_k=5)
    top = result.chunks[0]
    assert top.path.endswith("garden.md")
    assert {"fusion", "dense", "dense_rank", "bm25", "bm25_rank"} <= set(top.breakdown)
    scores = [c.score for c in result.chunks]
    assert scores == sorted(scores, reverse=True)


def test_degenerate_queries(ingested):
    with pytest.raises(InputError, match="empty query"):
        ingested.query("   ")
    assert ingested.query("soil", top_k=0).chunks == ()
    with pytest.raises(ConfigError, match="valid"):
        ingested.query("soil", mode="sparse")


def test_feature_override_per_call(ingested):
    only_bm25 = ingested.query("compost soil", features={"dense": False})
    assert "dense" not in {t.stage for t in only_bm25.trace.timings}
    with pytest.raises(ConfigError, match="valid features"):
        ingested.query("soil", features={"teleport": True})


def test_a_query_with_no_lexical_match_still_gets_dense_results(ingested):
    result = ingested.query("zzzqqq", mode="hybrid")
    assert result.chunks  # dense always answers; BM25 simply contributes nothing
    assert all("bm25" not in c.breakdown for c in result.chunks)


def test_filters_apply_before_search_and_an_empty_match_says_so(ingested):
    code_only = ingested.query("soil compost tomatoes", filters="source_type=code")
    assert code_only.chunks and all(c.source_type.value == "code" for c in code_only.chunks)
    by_path = ingested.query("soil", filters=["path~docs/**"])
    assert by_path.chunks and all(c.path.startswith("docs/") for c in by_path.chunks)
    nothing = ingested.query("soil", filters={"collection": "no-such-collection"})
    assert nothing.chunks == () and "filter matched no chunks" in nothing.trace.notes
    with pytest.raises(InputError, match="valid fields"):
        ingested.query("soil", filters="colour=red")


def test_routing_sends_code_looking_queries_to_code(ingested):
    q = "parse_config_file returns dict"
    routed = ingested.query(q, features={"routing": True})
    assert any("routed to source_type=code" in n for n in routed.trace.notes)
    assert all(c.source_type.value == "code" for c in routed.chunks)
    plain = ingested.query("tomatoes need sun", features={"routing": True})
    assert not any("routed" in n for n in plain.trace.notes)


def test_mmr_and_parent_context_are_switchable_and_timed(ingested):
    result = ingested.query("soil", features={"mmr": True, "parent_context": True}, top_k=2)
    stages = {t.stage for t in result.trace.timings}
    assert {"mmr", "parent_context"} <= stages
    assert "mmr_rank" in result.chunks[0].breakdown
    plain = ingested.query("soil", features={"mmr": False}, top_k=2)
    assert "mmr" not in {t.stage for t in plain.trace.timings}


def test_rerank_is_switchable_and_keeps_its_score(ingested):
    result = ingested.query("soil compost", features={"rerank": True})
    assert "rerank" in {t.stage for t in result.trace.timings}
    name = ingested.retriever.reranker.name
    assert name in result.chunks[0].breakdown and f"{name}_rank" in result.chunks[0].breakdown


def test_rerank_without_a_reranker_is_noted_not_silent(ingested):
    bare = copy.copy(ingested.retriever)
    bare.reranker = None
    result = bare.query("soil", features={"rerank": True})
    assert result.chunks
    assert any("rerank skipped" in n for n in result.trace.notes)


def test_routing_falls_back_when_there_is_no_code(engine, tmp_path):
    docs = tmp_path / "prose"
    docs.mkdir()
    (docs / "a.md").write_text("The parse_config_file routine is described in the manual.\n")
    engine.ingest([docs])
    result = engine.query("parse_config_file returns dict", features={"routing": True})
    assert result.chunks and any("routing skipped" in n for n in result.trace.notes)


def test_expansion_adds_prf_lists_and_says_what_it_added(ingested):
    result = ingested.query("compost soil drainage", features={"expansion": True}, top_k=3)
    assert "expansion" in {t.stage for t in result.trace.timings}
    assert any(k.startswith("prf_") for c in result.chunks for k in c.breakdown)  # Rocchio's dense list


def test_prf_reads_the_indexed_terms_from_the_store_instead_of_tokenising_the_pool(
    engine, tmp_path, monkeypatch
):
    """The index build caches every chunk's terms; a query's feedback pool must reuse them."""
    from hybrid_rag.lang.tokenize import Tokenizer

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, extra in enumerate(["mulch", "worms", "clay", "sand", "leaves", "manure"]):
        (folder / f"note{i}.md").write_text(f"Compost soil drainage improves with {extra} and humus.\n")
    engine.ingest([folder])
    tokenised: list[str] = []
    original = Tokenizer.tokenize_many

    def spy(self, texts, langs=None):
        tokenised.extend(texts)
        return original(self, texts, langs)

    monkeypatch.setattr(Tokenizer, "tokenize_many", spy)
    result = engine.query("compost drainage", features={"expansion": True})
    assert "expanded with: humus | improves | soil" in result.trace.notes
    chunk_texts = {c.text for c in engine.store.chunks(engine.store.all_chunk_ids()).values()}
    assert tokenised and not chunk_texts & set(tokenised)  # the query and single terms only
