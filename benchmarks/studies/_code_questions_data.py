"""The judged code-question benchmark's files: ``benchmarks/judged/code/<project>.json{,l}``.

``<project>.json`` pins where the project comes from (``registry`` pip, npm or apt, ``package``,
``version``, ``folder``: the subfolder of the unpacked package that is ingested, "" for all of it);
``<project>.jsonl`` holds its questions, one a line:
``{"id", "project", "version", "language", "kind", "question", "answers": [{"path", "lines", "symbol"?}]}``
with ``kind`` one of :data:`KINDS`, ``path`` relative to the ingested folder and ``lines`` 1-based
inclusive. :func:`load_specs` reads and validates both, so that a malformed line is reported
with its file and line number rather than scored as a miss.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studies._repo_corpus import Project
from studies._repo_fetch import fetch_project

JUDGED = Path(__file__).resolve().parents[1] / "judged" / "code"
KINDS = ("symbol", "behaviour", "architecture")
REGISTRIES = ("pip", "npm", "apt")


class FormatError(ValueError):
    """A judged file that does not follow the format (the message names the file and line)."""


@dataclass(frozen=True)
class Answer:
    path: str  # relative to the ingested folder, '/'-separated
    first: int
    last: int
    symbol: str | None = None

    def overlaps(self, path: str, start: int, end: int) -> bool:
        return path == self.path and start <= self.last and end >= self.first


@dataclass(frozen=True)
class Question:
    qid: str
    project: str
    language: str
    kind: str
    text: str
    answers: tuple[Answer, ...]

    @property
    def files(self) -> frozenset[str]:
        return frozenset(a.path for a in self.answers)


@dataclass(frozen=True)
class Spec:
    project: str
    language: str
    registry: str
    package: str
    version: str
    folder: str
    questions: tuple[Question, ...]

    def as_project(self) -> Project:
        """The ``_repo_fetch`` view of this project (name = the registry's package name)."""
        return Project(self.package, self.version, self.language, self.registry, self.folder)


def _need(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip() and key != "folder"):
        raise FormatError(f"{where}: {key!r} must be a non-empty {kind.__name__}, got {value!r}")
    return value


def parse_question(obj: Any, spec: dict[str, Any], where: str) -> Question:
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: a question is a JSON object, got {type(obj).__name__}")
    kind = _need(obj, "kind", str, where)
    if kind not in KINDS:
        raise FormatError(f"{where}: kind {kind!r} is not one of {KINDS}")
    for key in ("project", "version", "language"):
        if obj.get(key) != spec[key]:
            raise FormatError(f"{where}: {key} {obj.get(key)!r} differs from the project's {spec[key]!r}")
    raw = _need(obj, "answers", list, where)
    if not 1 <= len(raw) <= 5:
        raise FormatError(f"{where}: 1 to 5 answers, got {len(raw)}")
    answers = []
    for a in raw:
        lines = a.get("lines") if isinstance(a, dict) else None
        if (
            not isinstance(lines, list)
            or len(lines) != 2
            or not all(isinstance(n, int) for n in lines)
            or not 1 <= lines[0] <= lines[1]
        ):
            raise FormatError(
                f"{where}: an answer needs 'lines': [first, last], 1 <= first <= last; got {a!r}"
            )
        path = _need(a, "path", str, where)
        if path.startswith("/") or ".." in Path(path).parts or "\\" in path:
            raise FormatError(f"{where}: answer path {path!r} must be relative to the ingested folder")
        symbol = a.get("symbol")
        if symbol is not None and (not isinstance(symbol, str) or not symbol.strip()):
            raise FormatError(f"{where}: 'symbol' must be a non-empty string when given, got {symbol!r}")
        answers.append(Answer(path, lines[0], lines[1], symbol))
    return Question(
        _need(obj, "id", str, where),
        spec["project"],
        spec["language"],
        kind,
        _need(obj, "question", str, where),
        tuple(answers),
    )


def load_spec(meta_path: Path) -> Spec:
    """The project pinned in ``meta_path`` (``<project>.json``) with the questions of its ``.jsonl``."""
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise FormatError(f"{meta_path}: not JSON ({e})") from e
    where = str(meta_path)
    for key in ("project", "language", "registry", "package", "version"):
        _need(meta, key, str, where)
    if meta["registry"] not in REGISTRIES:
        raise FormatError(f"{where}: registry {meta['registry']!r} is not one of {REGISTRIES}")
    if not isinstance(meta.get("folder", ""), str):
        raise FormatError(f"{where}: 'folder' must be a string")
    if meta["project"] != meta_path.stem:
        raise FormatError(f"{where}: project {meta['project']!r} must match the file's name")
    questions_path = meta_path.with_suffix(".jsonl")
    questions: list[Question] = []
    seen: set[str] = set()
    if questions_path.is_file():
        for n, line in enumerate(questions_path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            at = f"{questions_path}:{n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise FormatError(f"{at}: not JSON ({e})") from e
            q = parse_question(obj, meta, at)
            if q.qid in seen:
                raise FormatError(f"{at}: id {q.qid!r} used twice")
            seen.add(q.qid)
            questions.append(q)
    return Spec(
        meta["project"],
        meta["language"],
        meta["registry"],
        meta["package"],
        meta["version"],
        meta.get("folder", ""),
        tuple(questions),
    )


def load_specs(folder: Path = JUDGED, names: list[str] | None = None) -> list[Spec]:
    """Every project of ``folder`` (or those ``names`` chooses, by project or language), sorted."""
    specs = [load_spec(p) for p in sorted(folder.glob("*.json"))]
    if names:
        unknown = set(names) - {s.project for s in specs} - {s.language for s in specs}
        if unknown:
            raise SystemExit(f"code_questions: no project or language {sorted(unknown)} in {folder}")
        specs = [s for s in specs if s.project in names or s.language in names]
    return specs


def fetch(spec: Spec, cache: Path) -> Path:
    """The unpacked folder that is ingested (downloaded once into ``cache``)."""
    root, _archive = fetch_project(spec.as_project(), cache)
    return root


if __name__ == "__main__":  # fetch every project: python benchmarks/studies/_code_questions_data.py
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    cache = Path(__file__).resolve().parents[1] / "work" / "code_questions" / "sdists"
    for s in load_specs(names=sys.argv[1:] or None):
        print(s.project, fetch(s, cache))
