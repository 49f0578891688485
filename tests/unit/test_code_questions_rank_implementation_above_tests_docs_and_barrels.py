"""``features.path_roles``: on a question about code, a test, example, benchmark, fixture,
vendored, generated, minified or re-export file and a prose or config file weigh less than the
implementation, in every language's layout, unless the question asks for that role; a chunk a
path prior weighted already is not weighted twice (``retrieval/code_rank.py``)."""

from __future__ import annotations

import pytest
from code_rank_cases import ranked, scored

from hybrid_rag.retrieval.code_rank import apply_path_roles
from hybrid_rag.retrieval.code_roles import asked_roles, is_reexport_text, path_role
from hybrid_rag.settings import CODE_ROLE_WEIGHTS, Settings


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("pkg/flag_test.go", "test"),
        ("tests/test_core.py", "test"),
        ("src/test_core.py", "test"),
        ("spec/parser_spec.rb", "test"),
        ("lib/parser_spec.rb", "test"),
        ("src/__tests__/render.tsx", "test"),
        ("src/components/render.test.tsx", "test"),
        ("src/test/java/org/x/ParserTest.java", "test"),
        ("Tests/CoreTests/ParserTests.swift", "test"),
        ("Foo.Tests/ParserTests.cs", "test"),
        ("examples/basic.rs", "example"),
        ("benches/bench_parse.rs", "benchmark"),
        ("testdata/input.go", "fixture"),
        ("vendor/github.com/x/y.go", "vendored"),
        ("third_party/zlib/inflate.c", "vendored"),
        ("api/v1/service.pb.go", "generated"),
        ("proto/service_pb2.py", "generated"),
        ("dist/app.min.js", "minified"),
        ("types/index.d.ts", "reexport"),
        ("README.md", "prose"),
        ("docs/guide.rst", "prose"),
        ("CHANGELOG", "prose"),
        ("package.json", "config"),
        ("config/settings.yaml", "config"),
        ("pyproject.toml", "config"),
        ("src/parser.py", None),
        ("lib/command.js", None),
        ("src/testing_utils_helper.rs", None),
        ("internal/contest/score.go", None),
    ],
)
def test_a_path_has_its_role_in_every_language(path: str, role: str | None) -> None:
    assert path_role(path) == role


def test_a_barrel_that_only_re_exports_is_a_re_export_and_one_with_code_is_not() -> None:
    assert is_reexport_text("src/index.ts", "export * from './a';\nexport { B, C } from './b';\n")
    assert is_reexport_text(
        "pkg/__init__.py",
        '"""Pkg."""\nfrom .core import run\nfrom .io import read\n__all__ = ["run", "read"]\n',
    )
    assert not is_reexport_text("pkg/__init__.py", "def run(x):\n    total = 0\n    return x + total\n")
    assert not is_reexport_text("src/core.ts", "export * from './a';\n")  # not a barrel's name


def test_a_question_asks_for_tests_docs_or_config_by_its_words() -> None:
    assert asked_roles("How is the flag parser tested?") == {"test"}
    assert {"prose", "config"} <= asked_roles("How do I install it and where is the config file?")
    assert asked_roles("Where is the retry delay computed?") == frozenset()


def test_tests_docs_and_config_move_below_the_implementation_on_a_code_question() -> None:
    results = ranked(
        ("README.md", 3.0), ("tests/test_retry.py", 2.9), ("package.json", 2.8), ("src/retry.py", 2.7)
    )
    out = apply_path_roles(results, "where is the retry delay computed?", CODE_ROLE_WEIGHTS, 1.0)
    assert out[0].path == "src/retry.py"
    assert out[0].breakdown.get("role") is None
    assert {r.path: r.breakdown["role"] for r in out[1:]} == {
        "README.md": 0.6,
        "tests/test_retry.py": 0.6,
        "package.json": 0.6,
    }


def test_a_question_that_asks_for_a_role_keeps_its_files_where_they_were() -> None:
    results = ranked(("README.md", 3.0), ("src/install.py", 2.9))
    out = apply_path_roles(results, "how do I install the package, per the docs?", CODE_ROLE_WEIGHTS, 1.0)
    assert [r.path for r in out] == ["README.md", "src/install.py"]
    tests = ranked(("src/retry.py", 3.0), ("tests/test_retry.py", 2.5))
    tests[1] = type(tests[1])(tests[1].chunk, 2.5, {**tests[1].breakdown, "prior": 0.6})  # the test prior's
    out = apply_path_roles(tests, "which tests cover the retry delay?", CODE_ROLE_WEIGHTS, 1.0)
    assert out[0].path == "tests/test_retry.py"  # the prior undone: 2.5 - ln(0.6) = 3.01


def test_a_chunk_the_path_prior_weighted_is_not_weighted_again() -> None:
    demoted = scored("tests/test_retry.py", 2.5, chunk_id=1)
    demoted = type(demoted)(demoted.chunk, 2.5, {"prior": 0.6})
    out = apply_path_roles([demoted], "how is the delay computed?", CODE_ROLE_WEIGHTS, 1.0)
    assert out[0].score == 2.5 and "role" not in out[0].breakdown


def test_an_unknown_role_or_a_zero_weight_is_refused() -> None:
    with pytest.raises(Exception, match="unknown role tset"):
        Settings().with_overrides({"retrieval.code_role_weights": {"tset": 0.5}})
    with pytest.raises(Exception, match="must be > 0"):
        Settings().with_overrides({"retrieval.code_role_weights": {"test": 0}})
    weights = (
        Settings().with_overrides({"retrieval.code_role_weights": {"prose": 1.0}}).retrieval.code_role_weights
    )
    assert weights["prose"] == 1.0 and weights["test"] == CODE_ROLE_WEIGHTS["test"]
