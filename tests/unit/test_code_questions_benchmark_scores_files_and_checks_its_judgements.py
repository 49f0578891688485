"""The judged code-question benchmark (``benchmarks/studies/code_questions.py``): its measures
(file-level NDCG@10 over first occurrences, chunk-level MRR@10, paired intervals against the best
stage), its ``--config label:key=value`` overrides, its format loader and its checker of line ranges."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies._code_questions_check import check_spec, short_name  # noqa: E402
from studies._code_questions_data import JUDGED, Answer, FormatError, Question, load_spec, load_specs  # noqa: E402
from studies._code_questions_metrics import (  # noqa: E402
    chunk_rr,
    file_ndcg,
    groups_of,
    paired,
    ranked_files,
    score,
    versus_best_stage,
)
from studies._code_questions_render import render_result  # noqa: E402
from studies.code_questions import parse_config  # noqa: E402

from hybrid_rag.settings import load_settings  # noqa: E402


def question(*answers: tuple[str, int, int], kind: str = "behaviour", qid: str = "p-01") -> Question:
    return Question(qid, "p", "python", kind, "how?", tuple(Answer(p, a, b) for p, a, b in answers))


def test_files_are_ranked_by_their_first_chunk_and_cut_to_ten():
    cited = [("a.py", 1, 5), ("b.py", 1, 5), ("a.py", 9, 12), ("c.py", 1, 2)]
    assert ranked_files(cited) == ["a.py", "b.py", "c.py"]
    many = [(f"f{i}.py", 1, 2) for i in range(15)]
    assert ranked_files(many) == [f"f{i}.py" for i in range(10)]


def test_file_ndcg_is_binary_over_answer_files_with_the_ideal_capped_at_ten():
    assert file_ndcg(["a.py"], {"a.py"}) == 1.0
    # the answer second: 1/log2(3) against an ideal of 1
    assert file_ndcg(["x.py", "a.py"], {"a.py"}) == pytest.approx(1 / math.log2(3))
    # two answers, one found second: (1/log2 3) / (1 + 1/log2 3)
    got = file_ndcg(["x.py", "a.py"], {"a.py", "b.py"})
    assert got == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert file_ndcg(["x.py"], {"a.py"}) == 0.0
    # a file repeated in the chunk list counts once: ranked_files runs first
    assert score([("a.py", 1, 2), ("a.py", 50, 60), ("b.py", 1, 2)], question(("b.py", 1, 2)))["ndcg"] == (
        pytest.approx(1 / math.log2(3))
    )
    # beyond 10 answer files the ideal stops at 10: ten answers found in ten places is perfect
    eleven = {f"f{i}" for i in range(11)}
    assert file_ndcg([f"f{i}" for i in range(10)], eleven) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        file_ndcg(["a.py"], set())


def test_chunk_mrr_needs_the_answer_file_and_overlapping_lines():
    q = question(("a.py", 10, 20))
    assert chunk_rr([("a.py", 1, 9), ("b.py", 10, 20), ("a.py", 20, 30)], q) == pytest.approx(1 / 3)
    assert chunk_rr([("a.py", 21, 30)], q) == 0.0
    eleventh = [("x.py", 1, 2)] * 10 + [("a.py", 10, 20)]
    assert chunk_rr(eleventh, q) == 0.0


def test_a_deeper_file_pass_supplies_the_files_while_the_chunks_keep_their_top_ten():
    q = question(("z.py", 1, 2))
    deep = [(f"f{i}.py", 1, 2) for i in range(5)] * 2 + [("z.py", 1, 2)]  # 11 chunks, 6 files
    got = score(deep[:10], q, deep)
    assert got["mrr"] == 0.0 and got["ndcg"] == pytest.approx(1 / math.log2(7))
    assert score(deep[:10], q)["ndcg"] == 0.0


def test_paired_interval_and_the_best_stage_is_chosen_per_group():
    a = {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    b = {"q1": 0.5, "q2": 0.5, "q3": 0.5}
    got = paired(a, b, ["q1", "q2", "q3"])
    assert got["diff"] == pytest.approx(0.0) and got["n"] == 3 and got["ci95"] > 0
    qs = [question(("a", 1, 1), kind="symbol", qid="s"), question(("a", 1, 1), kind="behaviour", qid="b")]
    groups = groups_of(qs)
    assert (
        groups["all"] == ["s", "b"] and groups["kind:symbol"] == ["s"] and groups["lang:python"] == ["s", "b"]
    )
    per = {
        "default": {"ndcg": {"s": 1.0, "b": 0.5}},
        "bm25": {"ndcg": {"s": 1.0, "b": 0.0}},
        "dense": {"ndcg": {"s": 0.0, "b": 1.0}},
    }
    vs = versus_best_stage(per, groups)
    assert vs["kind:symbol"]["stage"] == "bm25" and vs["kind:symbol"]["diff"] == 0.0
    assert vs["kind:behaviour"]["stage"] == "dense" and vs["kind:behaviour"]["diff"] == -0.5


def test_a_labelled_override_maps_to_mode_flags_and_settings():
    c = parse_config("ablate:mode=bm25,expansion=false,retrieval.rrf_k=30,retrieval.fusion=rrf")
    assert c.name == "ablate" and c.mode == "bm25"
    assert dict(c.features) == {"expansion": False}
    assert dict(c.overrides) == {"retrieval.rrf_k": 30, "retrieval.fusion": "rrf"}
    assert c.settings(load_settings(None)).retrieval.rrf_k == 30
    for bad in ("no-colon", ":expansion=false", "x:expansion", "x:expansion=maybe"):
        with pytest.raises(SystemExit):
            parse_config(bad)


def _write_project(folder: Path, questions: list[dict], **meta) -> Path:
    spec = {"project": "demo", "language": "python", "registry": "pip", "package": "demo", "version": "1.0"}
    spec |= {"folder": "", **meta}
    (folder / "demo.json").write_text(json.dumps(spec))
    (folder / "demo.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return folder / "demo.json"


def _q(i: int, kind: str, path: str, lines: list[int], symbol: str | None = None) -> dict:
    answer = {"path": path, "lines": lines} | ({"symbol": symbol} if symbol else {})
    return {
        "id": f"demo-{i:02d}",
        "project": "demo",
        "version": "1.0",
        "language": "python",
        "kind": kind,
        "question": f"question {i}",
        "answers": [answer],
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "trivia"}, "kind"),
        ({"answers": []}, "1 to 5 answers"),
        ({"answers": [{"path": "m.py", "lines": [5, 2]}]}, "lines"),
        ({"answers": [{"path": "../m.py", "lines": [1, 2]}]}, "relative"),
        ({"version": "2.0"}, "version"),
    ],
)
def test_a_malformed_question_is_reported_with_its_file_and_line(tmp_path, change, message):
    meta = _write_project(
        tmp_path, [_q(1, "symbol", "m.py", [1, 2]), _q(2, "symbol", "m.py", [1, 2]) | change]
    )
    with pytest.raises(FormatError, match=message) as e:
        load_spec(meta)
    assert "demo.jsonl:2" in str(e.value)


def test_the_checker_finds_missing_files_ranges_past_the_end_and_misplaced_symbols(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("import os\n\n\ndef parse_options(argv):\n    return argv\n" + "\n" * 20)
    good = [_q(1, "symbol", "m.py", [4, 5], "cli.parse_options"), _q(2, "behaviour", "m.py", [1, 5])]
    bad = [
        _q(3, "architecture", "gone.py", [1, 2]),
        _q(4, "behaviour", "m.py", [20, 40]),
        _q(5, "symbol", "m.py", [1, 3], "parse_options"),  # the range misses the definition
        _q(6, "symbol", "m.py", [4, 5], "parse"),  # a word's prefix is not the name
    ]
    spec = load_spec(_write_project(tmp_path, good + bad))
    problems = check_spec(spec, src)
    assert any("demo-03" in p and "no such file" in p for p in problems)
    assert any("demo-04" in p and "lines" in p for p in problems)
    assert any("demo-05" in p and "'parse_options'" in p for p in problems)
    assert any("demo-06" in p and "'parse'" in p for p in problems)
    assert not any("demo-01" in p or "demo-02" in p for p in problems)
    assert any("at least 15" in p for p in problems)
    only_symbols = load_spec(
        _write_project(tmp_path, [_q(i, "symbol", "m.py", [4, 5]) for i in range(1, 16)])
    )
    assert [p for p in check_spec(only_symbols, src)] == [
        "demo: no behaviour question",
        "demo: no architecture question",
    ]


def test_short_names_of_qualified_symbols():
    assert short_name("Command.opts") == "opts"
    assert short_name("Itertools::tuple_windows") == "tuple_windows"
    assert short_name("org.jpype.JPypeContext#getInstance()") == "getInstance"
    assert short_name("FlagSet") == "FlagSet"


def test_every_committed_project_follows_the_format():
    specs = load_specs(JUDGED)
    assert specs, f"no judged project in {JUDGED}"
    for spec in specs:
        kinds = {q.kind for q in spec.questions}
        assert len(spec.questions) >= 15, spec.project
        assert kinds == {"symbol", "behaviour", "architecture"}, spec.project


def test_the_rendered_section_states_every_table_and_the_targets():
    summary = {
        g: {"ndcg": 0.9, "mrr": 0.5, "n": 2}
        for g in (
            "all",
            "kind:symbol",
            "kind:behaviour",
            "lang:python",
            "project:demo",
            "lang:python|kind:symbol",
        )
    }
    result = {
        "protocol": {"top_k": 10, "top_files": 10, "embedder": "auto"},
        "configs": [{"name": "default", "description": "shipped"}, {"name": "bm25", "description": "BM25"}],
        "projects": [
            {
                "project": "demo",
                "language": "python",
                "package": "pip:demo==1.0",
                "folder": "",
                "files": 3,
                "chunks": 12,
                "questions": {"symbol": 1, "behaviour": 1, "architecture": 0},
                "ms_p50": {"default": 20.0},
            }
        ],
        "summary": {"default": summary, "bm25": summary},
        "versus_best_stage": {"ndcg": {"all": {"stage": "bm25", "diff": 0.0, "ci95": 0.1, "n": 2}}},
    }
    text = render_result(result)
    for needle in (
        "| demo | python |",
        "**Per language**",
        "| symbol | 2 |",
        "+0.000 ± 0.100 (bm25)",
        "Targets",
    ):
        assert needle in text
