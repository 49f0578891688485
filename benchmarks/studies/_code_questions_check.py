"""Check the judged code questions against the unpacked sources they were written on.

For every answer: the file exists under the project's ingested folder, its line range lies within
the file, and, where ``symbol`` is given, the symbol's short name (``Command.opts`` -> ``opts``,
``Foo::bar`` -> ``bar``) appears in the first :data:`HEAD_LINES` lines of the range (a definition's
range starts at its signature, its decorators or doc comment). Also: at least :data:`MIN_QUESTIONS`
questions a project, every kind present.

    .venv/bin/python benchmarks/studies/_code_questions_check.py [PROJECT|LANGUAGE ...]

fetches what is missing (``benchmarks/work/code_questions/sdists``), prints every problem and
exits 1 when there is one.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

HEAD_LINES = 8
MIN_QUESTIONS = 15


def short_name(symbol: str) -> str:
    """The last segment of a qualified name: ``a.b.C.m`` / ``C::m`` / ``C#m`` -> ``m``."""
    return re.split(r"::|\.|#", symbol.strip().rstrip("()"))[-1]


def check_spec(spec, root: Path) -> list[str]:  # spec: _code_questions_data.Spec
    """Every problem of ``spec``'s questions against the unpacked folder ``root`` (empty: fine)."""
    problems: list[str] = []
    kinds = Counter(q.kind for q in spec.questions)
    if len(spec.questions) < MIN_QUESTIONS:
        problems.append(f"{spec.project}: {len(spec.questions)} questions, at least {MIN_QUESTIONS} wanted")
    for kind in ("symbol", "behaviour", "architecture"):
        if not kinds[kind]:
            problems.append(f"{spec.project}: no {kind} question")
    cache: dict[str, list[str] | None] = {}
    for q in spec.questions:
        for a in q.answers:
            if a.path not in cache:
                f = root / a.path
                cache[a.path] = (
                    f.read_text(encoding="utf-8", errors="replace").splitlines() if f.is_file() else None
                )
            lines = cache[a.path]
            where = f"{q.qid}: {a.path}:{a.first}-{a.last}"
            if lines is None:
                problems.append(f"{where}: no such file under {root}")
                continue
            if a.last > len(lines):
                problems.append(f"{where}: the file has {len(lines)} lines")
                continue
            if a.symbol:
                name = short_name(a.symbol)
                head = lines[a.first - 1 : min(a.last, a.first - 1 + HEAD_LINES)]
                if not any(re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", line) for line in head):
                    problems.append(
                        f"{where}: {name!r} ({a.symbol}) not in the range's first {HEAD_LINES} lines"
                    )
    return problems


def main(argv: list[str]) -> int:
    benchmarks = Path(__file__).resolve().parents[1]
    if str(benchmarks) not in sys.path:
        sys.path.insert(0, str(benchmarks))
    from studies._code_questions_data import FormatError, fetch, load_specs

    try:
        specs = load_specs(names=argv or None)
    except FormatError as e:
        print(f"format: {e}")
        return 1
    cache, bad = benchmarks / "work" / "code_questions" / "sdists", 0
    for spec in specs:
        problems = check_spec(spec, fetch(spec, cache))
        kinds = Counter(q.kind for q in spec.questions)
        print(
            f"{spec.project} ({spec.language}): {len(spec.questions)} questions {dict(kinds)}, "
            f"{len(problems)} problems"
        )
        for p in problems:
            print("  " + p)
        bad += len(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
