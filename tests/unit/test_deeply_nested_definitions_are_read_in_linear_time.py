"""A file of deeply nested definitions is read as fast as one of as many flat ones.

A small hostile file (3,000 nested JavaScript functions, 62 KB; Rust and Java alike) once took
more than 20 minutes of symbol extraction, holding the writer lock: each definition walked all
its ancestors, and a tree-sitter node's ``parent`` itself costs its depth, so the work grew with
the cube of the depth.
Each case runs in a child process with a time limit (the old code never came back) and its CPU
time is compared with the flat file's, measured in the same process: the bound (10x plus half a
second) is far above what a linear reader needs and far below what a quadratic one takes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from hybrid_rag.code.grammars import load

pytestmark = pytest.mark.skipif(
    any(load(g) is None for g in ("javascript", "python", "rust", "java")), reason="grammars not installed"
)

_CHILD = textwrap.dedent(
    """
    import json, sys, time
    import hybrid_rag.code.extract as extract
    from hybrid_rag.symbols.extract import file_symbols
    from hybrid_rag.types import LoadedFile, SourceType

    out = {}
    for name, path, language, text in json.loads(sys.stdin.read()):
        start = time.process_time()
        units = extract.extract_units(path, text)
        file = LoadedFile(path, text, "", len(text), 0.0, SourceType.CODE, language)
        symbols = file_symbols(file)
        seconds = time.process_time() - start
        out[name] = {"seconds": seconds, "units": len(units or []), "symbols": len(symbols)}
    print(json.dumps(out))
    """
)


def _run(cases: list[tuple[str, str, str, str]], limit: float = 120.0) -> dict[str, dict[str, float]]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            timeout=limit,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {[c[0] for c in cases]} took more than {limit:.0f} s")
    return json.loads(done.stdout)


NESTED = {  # 3,000 definitions each inside the one before, and 3,000 side by side
    "javascript": (
        "deep.js",
        # each body calls a function: a reference's enclosing definition is found for each use too
        lambda n: "".join(f"function f{i}() {{\ng{i}();\n" for i in range(n)) + "return 1;\n" + "}\n" * n,
        lambda n: "".join(f"function f{i}() {{\ng{i}();\nreturn 1;\n}}\n" for i in range(n)),
    ),
    "rust": (
        "deep.rs",
        lambda n: "".join(f"fn f{i}() {{\n" for i in range(n)) + "}\n" * n,
        lambda n: "".join(f"fn f{i}() {{\n}}\n" for i in range(n)),
    ),
    "java": (
        "Deep.java",
        lambda n: "".join(f"class C{i} {{\n" for i in range(n)) + "}\n" * n,
        lambda n: "".join(f"class C{i} {{\n}}\n" for i in range(n)),
    ),
}


@pytest.mark.parametrize("language", sorted(NESTED))
def test_three_thousand_nested_definitions_cost_what_flat_ones_do(language: str) -> None:
    path, nested, flat = NESTED[language]
    found = _run([("flat", path, language, flat(3000)), ("nested", path, language, nested(3000))])
    assert found["nested"]["units"] == found["flat"]["units"] == 3000
    assert found["nested"]["symbols"] == 3000
    assert found["nested"]["seconds"] <= 10 * found["flat"]["seconds"] + 0.5, found


def test_nested_python_functions_cost_what_flat_ones_do() -> None:
    # one space an indent level: 1,000 levels are 0.5 MB; tree-sitter-python's indent stack keeps
    # about 500 of them apart (the rest nest no deeper), which the old reader took ~4 s for
    nested = "".join(f"{' ' * i}def f{i}():\n" for i in range(1000)) + " " * 1000 + "return 1\n"
    flat = "".join(f"def f{i}():\n    return 1\n" for i in range(1000))
    found = _run([("flat", "flat.py", "python", flat), ("nested", "deep.py", "python", nested)])
    assert found["flat"]["units"] == 1000 and found["nested"]["units"] >= 500
    assert found["nested"]["seconds"] <= 10 * found["flat"]["seconds"] + 0.5, found


def test_nested_units_keep_their_enclosing_names() -> None:
    from hybrid_rag.code.extract import extract_units

    units = extract_units("deep.js", NESTED["javascript"][1](50)) or []
    assert [u.qualified_name for u in units[:3]] == ["f0", "f0.f1", "f0.f1.f2"]
    assert units[-1].parent == ".".join(f"f{i}" for i in range(49))
    assert units[10].signature == "function f10()" and units[10].start_line == 21  # two lines a level
