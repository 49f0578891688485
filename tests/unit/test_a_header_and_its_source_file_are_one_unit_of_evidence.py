"""``features.paired_sources``: file coherence counts a C or C++ header and the source file of its
stem in its folder as one unit of evidence (a declaration in ``clean.h``, its definition in
``clean.cc``); each file's own chunks still step down within that file; other files are their own."""

from __future__ import annotations

from code_rank_cases import ranked

from hybrid_rag.retrieval.code_rank import apply_file_coherence, source_unit, spread_of


def test_a_header_and_its_source_lift_the_unit_above_a_single_better_chunk() -> None:
    results = ranked(
        ("src/graph.cc", 1.95),
        ("src/clean.h", 1.9),
        ("src/clean.cc", 1.8),
        ("src/util.cc", 0.0),
        ("src/disk.cc", -0.5),
    )
    off = apply_file_coherence(results, 0.25, 0.35, spread_of(results))
    on = apply_file_coherence(results, 0.25, 0.35, spread_of(results), paired=True)
    assert [r.path for r in off] == [r.path for r in results]  # two files of one chunk each: no support
    assert on[0].path == "src/clean.h" and on[0].breakdown["coherence"] > 0
    clean_cc = next(r for r in on if r.path == "src/clean.cc")
    assert "coherence" not in clean_cc.breakdown  # its file's first chunk: not stepped down


def test_only_a_c_family_stem_in_one_folder_pairs() -> None:
    assert source_unit("src/clean.h") == source_unit("src/clean.cc") == "src/clean"
    assert source_unit("src/Clean.HPP") == source_unit("src/Clean.cpp")
    assert source_unit("include/clean.h") != source_unit("src/clean.cc")
    assert source_unit("lib/clean.ts") == "lib/clean.ts" and source_unit("lib/clean.js") == "lib/clean.js"
    assert source_unit("Makefile") == "Makefile" and source_unit("a.b/clean") == "a.b/clean"


def test_off_the_rule_is_file_coherence_as_it_was() -> None:
    results = ranked(("src/a.h", 2.0), ("src/a.cc", 1.9), ("src/a.cc", 1.8), ("src/b.cc", 0.0))
    off = apply_file_coherence(results, 0.25, 0.35, spread_of(results))
    on = apply_file_coherence(results, 0.25, 0.35, spread_of(results), paired=True)
    header_off = next(r for r in off if r.path == "src/a.h")
    header_on = next(r for r in on if r.path == "src/a.h")
    assert "coherence" not in header_off.breakdown and header_on.breakdown["coherence"] > 0
    assert next(r for r in off if r.path == "src/a.cc").breakdown["coherence"] > 0  # its own file's support
