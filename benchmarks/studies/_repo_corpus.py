"""The repository benchmark's data: real projects' source distributions, judged by their docstrings.

For each pinned project ``pip download --no-binary :all: --no-deps NAME==VERSION`` fetches the
sdist (cached), which is unpacked as it ships (code, tests, docs, examples, configs). Queries are
made CodeSearchNet's way, over the whole repository as a user would ingest it:

* every function or method (dunders skipped) whose docstring's first sentence has at least
  ``MIN_WORDS`` words is a candidate, except test functions (a name starting with ``test``, or
  defined in a test file: ``is_test_path``), which CodeSearchNet drops too: users search for the
  implementation; a sentence two candidates share is dropped;
* a seeded sample of the candidates (``cap`` a project, with room for drops) becomes the targets:
  each target's docstring is removed from its file (a body left empty gets ``...``), and the
  target's line range (decorators to its last line) is taken from the rewritten file;
* a target whose sentence still appears anywhere in the rewritten repository (any file, case and
  whitespace folded) is dropped; the first ``cap`` left are the queries.

A result is relevant when it cites the target's file and overlaps its line range.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import asdict, dataclass
from pathlib import Path

from studies._repo_docs import doc_candidates, strip_doc_comments

MIN_WORDS = 5
# what makes a function a candidate, in the corpus cache's key (a new rule rebuilds the corpus)
TARGET_RULE = "implementation-only"


@dataclass(frozen=True)
class Project:
    """A pinned project: a PyPI sdist by default; ``source`` "npm" or "apt" for a package of those
    registries (``_repo_fetch.py``), ``subdir`` the folder of it that is ingested, ``language`` the
    language whose definitions are queried."""

    name: str
    version: str
    language: str = "python"
    source: str = "pip"
    subdir: str = ""

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class Target:
    """One judged query: the sentence, the function it was cut from and where it lies now."""

    qid: str
    query: str
    path: str  # relative to the project's root, '/'-separated
    name: str  # dotted: Class.method
    start_line: int
    end_line: int
    kind: str = "doc"  # doc (a doc comment's sentence), identifier, judged
    also: tuple[tuple[str, int, int], ...] = ()  # further answers (path, first, last line)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        if self.kind == "doc" and not self.also:  # RESULTS.md#repository-answers' manifests stay as they were
            del d["kind"], d["also"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Target:
        return cls(**{**d, "also": tuple(tuple(a) for a in d.get("also", ()))})


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, whitespace collapsed ('' if none)."""
    paragraph = doc.strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    match = re.search(r"(?<=[.!?])\s", text)
    return (text[: match.start()] if match else text).strip()


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def functions_of(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its dotted name, in source order."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((prefix + child.name, child))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def _docstring_node(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Expr | None:
    first = fn.body[0] if fn.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def candidates(root: Path, language: str = "python") -> list[tuple[str, str, int, str]]:
    """(relative path, dotted name, index among the file's functions, its docstring's first
    sentence) of every candidate, sorted (test functions and functions of test files are not
    candidates)."""
    if language != "python":
        return doc_candidates(root, language)
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if is_test_path(rel):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for index, (name, fn) in enumerate(functions_of(tree)):
            short = name.rsplit(".", 1)[-1]
            if (short.startswith("__") and short.endswith("__")) or short.startswith("test"):
                continue
            sentence = first_sentence(ast.get_docstring(fn) or "")
            if len(sentence.split()) >= MIN_WORDS:
                out.append((rel, name, index, sentence))
    return out


def strip_docstrings(source: str, indices: set[int]) -> tuple[str, dict[int, tuple[int, int]]]:
    """``source`` with the docstrings of the functions at ``indices`` removed, and each such
    function's (first, last) line in the rewritten text (decorators included)."""
    tree = ast.parse(source)
    functions = functions_of(tree)
    lines = source.splitlines(keepends=True)
    cuts = []  # (first, last) 1-based lines removed, and a replacement
    for index in sorted(indices):
        fn = functions[index][1]
        node = _docstring_node(fn)
        assert node is not None and node.end_lineno is not None
        stub = []
        if len(fn.body) == 1:  # the docstring was the whole body: keep it a valid function
            stub = [" " * node.col_offset + "...\n"]
        cuts.append((node.lineno, node.end_lineno, stub))
    for first, last, stub in sorted(cuts, reverse=True):
        lines[first - 1 : last] = stub
    rewritten = "".join(lines)
    new_functions = functions_of(ast.parse(rewritten))
    ranges = {}
    for index in indices:
        fn = new_functions[index][1]
        start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        ranges[index] = (start, fn.end_lineno or fn.lineno)
    return rewritten, ranges


def fetch(project: Project, cache: Path) -> Path:
    """The project's sdist in ``cache`` (downloaded once with pip), unpacked under ``cache/src``."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"{project.name}-{project.version}"
    found = [
        p for p in cache.glob("*.tar.gz") if p.name.lower().replace("_", "-") == f"{stem}.tar.gz".lower()
    ]
    if not found:
        pip = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q"]
        subprocess.run([*pip, project.spec, "-d", str(cache)], check=True)
        found = [
            p for p in cache.glob("*.tar.gz") if p.name.lower().replace("_", "-") == f"{stem}.tar.gz".lower()
        ]
    if not found:
        raise SystemExit(f"repo_search: pip left no sdist of {project.spec} in {cache}")
    src = cache / "src" / stem
    if not src.is_dir():
        with tarfile.open(found[0]) as tar:
            top = tar.getnames()[0].split("/", 1)[0]
            tar.extractall(cache / "src", filter="data")
        if (cache / "src" / top) != src:
            (cache / "src" / top).rename(src)
    return src


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_corpus(
    src: Path, dest: Path, cap: int, seed: int, language: str = "python"
) -> tuple[list[Target], dict[str, int]]:
    """Copy ``src`` to ``dest`` with the sampled targets' docstrings removed; the judged targets."""
    found = candidates(src, language)
    sentences: dict[str, list[tuple[str, str, int]]] = {}
    queries = {}
    for rel, name, index, sentence in found:
        sentences.setdefault(fold(sentence), []).append((rel, name, index))
        queries[rel, index] = sentence
    unique = [(s, hits[0]) for s, hits in sentences.items() if len(hits) == 1]
    random.Random(seed).shuffle(unique)
    sample = unique[: cap + cap // 2]
    by_file: dict[str, set[int]] = {}
    for _, (rel, _, index) in sample:
        by_file.setdefault(rel, set()).add(index)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    ranges: dict[tuple[str, int], tuple[int, int]] = {}
    for rel, indices in by_file.items():
        strip = strip_docstrings if language == "python" else strip_doc_comments(Path(rel).suffix)
        rewritten, got = strip((src / rel).read_text(encoding="utf-8"), indices)
        (dest / rel).write_text(rewritten, encoding="utf-8")
        ranges.update({(rel, i): r for i, r in got.items()})
    corpus = [fold(_read(p)) for p in sorted(dest.rglob("*")) if p.is_file()]
    targets, dropped = [], 0
    for sentence, (rel, name, index) in sample:
        if any(sentence in text for text in corpus):
            dropped += 1
            continue
        if len(targets) < cap:
            start, end = ranges[(rel, index)]
            targets.append(Target(f"{src.name}:{len(targets)}", queries[rel, index], rel, name, start, end))
    counts = {
        "candidates": len(found),
        "shared_sentence": len(found) - len(unique),
        "sampled": len(sample),
        "still_in_corpus": dropped,
        "queries": len(targets),
    }
    return targets, counts


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""


def is_test_path(path: str) -> bool:
    """A test file by the usual conventions: a tests/test folder, test_*.py, *_test.py, conftest.py;
    in other languages *_test.go, *.test.js, *.spec.ts, __tests__/, spec/."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        any(p in {"tests", "test", "testing", "__tests__", "spec"} for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith(("_test.py", "_test.go"))
        or any(f".{k}." in name for k in ("test", "spec"))
        or name == "conftest.py"
    )


def relative(path: str, root: Path) -> str:
    """A stored path relative to the project's root (stored paths may be absolute or relative)."""
    p = path.replace("\\", "/")
    prefix = root.as_posix().rstrip("/") + "/"
    if p.startswith(prefix):
        return p[len(prefix) :]
    marker = f"/{root.name}/"
    return p.split(marker, 1)[1] if marker in p else p


def overlaps(target: Target, rel: str, start: int, end: int) -> bool:
    """Whether a result citing ``rel:start-end`` holds (a line of) one of the target's answers."""
    answers = ((target.path, target.start_line, target.end_line), *target.also)
    return any(rel == path and start <= last and end >= first for path, first, last in answers)
