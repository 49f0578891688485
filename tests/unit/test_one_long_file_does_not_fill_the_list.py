"""``features.file_coherence``: evidence from several chunks of one file adds up with diminishing
returns: the file's best chunk gains, its further chunks step down, so one long file does not
fill the first places and a small file that answers is not pushed out."""

from __future__ import annotations

from code_rank_cases import ranked

from hybrid_rag.retrieval.code_rank import apply_file_coherence, spread_of
from hybrid_rag.settings import Settings


def test_a_small_file_that_answers_is_not_pushed_out_by_one_long_file() -> None:
    rows = [("lib/command.js", 3.0 - 0.1 * i) for i in range(7)] + [("lib/help.js", 2.3)]
    rows += [(f"lib/other{i}.js", 0.5 - 0.1 * i) for i in range(6)]
    results = ranked(*rows)
    before = [r.path for r in results].index("lib/help.js")
    shipped = Settings().retrieval
    out = apply_file_coherence(
        results, shipped.code_coherence_bonus, shipped.code_coherence_step, spread_of(results)
    )
    after = [r.path for r in out].index("lib/help.js")
    assert before == 7
    assert after <= 4, [r.path for r in out]  # fifth, where seven chunks of one file came first
    steeper = apply_file_coherence(results, 0.25, 0.35, spread_of(results))
    assert [r.path for r in steeper].index("lib/help.js") <= 2
    assert out[0].path == "lib/command.js"  # the long file's best chunk still leads
    assert [r.path for r in out[:10]].count("lib/command.js") <= 7


def test_evidence_from_several_chunks_lifts_a_file_above_a_single_better_chunk() -> None:
    results = ranked(
        ("lib/a.js", 2.0),
        ("lib/b.js", 1.9),
        ("lib/b.js", 1.8),
        ("lib/b.js", 1.7),
        ("lib/c.js", 0.0),
        ("lib/d.js", -0.5),
    )
    out = apply_file_coherence(results, 0.25, 0.35, spread_of(results))
    assert out[0].path == "lib/b.js" and out[0].breakdown["coherence"] > 0
    assert [r.path for r in out].index("lib/a.js") == 1


def test_files_of_one_chunk_each_keep_their_order() -> None:
    results = ranked(*((f"lib/f{i}.js", 3.0 - i) for i in range(5)))
    out = apply_file_coherence(results, 0.25, 0.35, spread_of(results))
    assert [r.id for r in out] == [r.id for r in results]
    assert [r.score for r in out] == [r.score for r in results]
