"""The repository benchmark's other questions: identifiers, and the hand-judged natural questions.

**Identifier questions** (made from the judged corpus, seeded): a definition (function, method,
class, struct, trait, interface) outside test files whose short name is defined once in the
project, at least 4 characters and not private (``_x``), asked by name in one of ``TEMPLATES``
(a method by its qualified name, ``Owner.name``, or ``Owner::name`` in Rust and C++). The answer is
the definition's lines (decorators and attributes excluded in other languages).

**Judged questions** (``benchmarks/judged/<project>.jsonl``, written by reading the code): one JSON
object a line, ``{"id", "project", "version", "question", "answers": ["path:first-last", ...]}``,
the paths relative to the ingested folder of that version, unmodified (the doc comments kept).
"""

from __future__ import annotations

import ast
import json
import random
from collections import Counter
from pathlib import Path

from studies._repo_corpus import Project, Target, is_test_path
from studies._repo_docs import _family, language_of, scan

JUDGED = Path(__file__).resolve().parents[1] / "judged"
TEMPLATES = ("where is {} defined?", "what does {} do?", "{}", "show me the implementation of {}")
MIN_CHARS = 4


def python_definitions(root: Path) -> list[tuple[str, str, str, int, int]]:
    """(path, qualified name, short name, first, last line) of every function and class."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue

        def walk(node: ast.AST, prefix: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    end = child.end_lineno or child.lineno
                    out.append((rel, prefix + child.name, child.name, start, end))
                    walk(child, f"{prefix}{child.name}.")
                else:
                    walk(child, prefix)

        walk(tree, "")
    return out


def other_definitions(root: Path, language: str) -> list[tuple[str, str, str, int, int]]:
    family, out = _family(language), []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or language_of(rel) not in family:
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for d in scan(source, path.suffix.lower(), types=True):
            out.append((rel, d.name, d.name.rsplit(".", 1)[-1], d.start, d.end))
    return out


def identifier_targets(root: Path, project: Project, n: int, seed: int) -> list[Target]:
    """``n`` seeded identifier questions over the corpus at ``root`` (ids ``NAME:id:i``)."""
    if project.language == "python":
        found = python_definitions(root)
    else:
        found = other_definitions(root, project.language)
    counts = Counter(short for _, _, short, _, _ in found)
    eligible = [
        d
        for d in found
        if counts[d[2]] == 1
        and len(d[2]) >= MIN_CHARS
        and not d[2].startswith("_")
        and not is_test_path(d[0])
        and not d[2].lower().startswith("test")
    ]
    random.Random(seed).shuffle(eligible)
    sep = "::" if project.language in {"rust", "cpp", "c"} else "."
    out = []
    for i, (rel, qualified, _, start, end) in enumerate(eligible[:n]):
        asked = qualified.replace(".", sep)
        query = TEMPLATES[i % len(TEMPLATES)].format(asked)
        out.append(Target(f"{project.name}:id:{i}", query, rel, qualified, start, end, kind="identifier"))
    return out


def judged_targets(project: Project, folder: Path = JUDGED) -> list[Target]:
    """The hand-judged questions of ``project`` (none when it has no file); a file judged against
    another version is refused."""
    path = folder / f"{project.name.lower()}.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if q["version"] != project.version:
            raise SystemExit(f"{path}: judged against {q['version']}, the study pins {project.spec}")
        answers = []
        for a in q["answers"]:
            rel, lines = a.rsplit(":", 1)
            first, _, last = lines.partition("-")
            answers.append((rel, int(first), int(last or first)))
        (rel, first, last), *also = answers
        out.append(Target(q["id"], q["question"], rel, "", first, last, kind="judged", also=tuple(also)))
    return out
