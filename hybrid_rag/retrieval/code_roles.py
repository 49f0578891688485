"""What a file is for in a repository (its path role), and whether a question asks for that role.

A repository answers a question about its code with its implementation; tests, examples,
benchmarks, fixtures, vendored and generated files, minified bundles, type declarations and
re-export files (``*.d.ts``, ``index.ts`` barrels, ``__init__.py`` that only imports) repeat the
implementation's words without being it, and prose and config files (README, docs, YAML, JSON)
describe it. ``path_role`` names the role of a path (language-aware: ``_test.go``, ``test_*.py``,
``*_spec.rb``, ``spec/``, ``__tests__``, ``src/test/java``, ``FooTests.cs``, Swift's ``Tests/``);
``asked_roles`` the roles a question asks for ("how is the parser tested?" asks for tests, "how
do I install it?" for prose and config), which then weigh as the implementation does.

Pure functions of a path and a question: the stage that uses them is ``retrieval/code_rank.py``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hybrid_rag.code.roles import (  # the path's role lives below the ingest, which orders by it
    BENCHMARK,
    CONFIG,
    EXAMPLE,
    FIXTURE,
    GENERATED,
    MINIFIED,
    PROSE,
    REEXPORT,
    ROLES,
    TEST,
    VENDORED,
    path_role,
)

__all__ = ["ROLES", "asked_roles", "is_reexport_text", "path_role"]

# a barrel or an ``__init__.py`` whose lines are imports and exports only (the chunk's text decides)
_REEXPORT_FILES = re.compile(r"^(?:index\.[cm]?[jt]sx?|__init__\.py|mod\.rs|lib\.rs|package-info\.java)$")
_REEXPORT_LINE = re.compile(
    r"^\s*(?:export\s+(?:\*|\{|type\s+\{|default\s+from)|export\s+.*\bfrom\b|import\b|from\s+\S+\s+import\b"
    r"|(?:pub\s+)?use\b|(?:pub\s+)?mod\s+\w+;|module\.exports\s*=\s*require|exports\.\w+\s*=\s*require"
    r"|__all__\b|[\]\)\}],?$|['\"][\w.]+['\"],?$|\w+,$)"
)
_COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|\"\"\"|''')")
REEXPORT_SHARE = 0.8  # a barrel: at least this share of its code lines import or re-export

# what a question says when it asks for a role (the words, lowercased, as whole words or stems)
_ASKS: dict[str, re.Pattern[str]] = {
    TEST: re.compile(r"\b(?:test\w*|spec|specs|unit ?tests?|assert\w*|mock\w*|fixtures?|coverage)\b"),
    EXAMPLE: re.compile(r"\b(?:examples?|demos?|samples?|usage|tutorial)\b"),
    BENCHMARK: re.compile(r"\b(?:bench\w*|perf|performance|speed|fast|faster|slow)\b"),
    FIXTURE: re.compile(r"\b(?:fixtures?|testdata|mocks?|test data)\b"),
    VENDORED: re.compile(r"\b(?:vendor\w*|third[- ]party|bundled)\b"),
    GENERATED: re.compile(r"\b(?:generated|codegen|protobuf|proto|grpc)\b"),
    MINIFIED: re.compile(r"\b(?:minified|bundle|dist)\b"),
    REEXPORT: re.compile(
        r"\b(?:exports?|exported|re-?exports?|public api|entry ?point|typings?|declarations?|d\.ts)\b"
    ),
    PROSE: re.compile(
        r"\b(?:install\w*|docs?|documentation|documented|readme|changelog|release notes?|licen[cs]e\w*"
        r"|guide|tutorial|getting started|contribut\w*|upgrade|migrat\w*|faq|explain\w* in the docs)\b"
    ),
    CONFIG: re.compile(
        r"\b(?:config\w*|settings?|yaml|json|toml|ini|dependenc\w*|package\.json|manifest|install\w*"
        r"|environment variables?|env vars?|build|ci|makefile|dockerfile)\b"
    ),
}


def is_reexport_text(path: str, text: str) -> bool:
    """Whether a chunk of a barrel file (``index.ts``, ``__init__.py``, ``mod.rs``) only imports
    and re-exports: at least ``REEXPORT_SHARE`` of its code lines (comments and blank lines aside).

    >>> is_reexport_text("src/index.ts", "export * from './a';\\nexport { B } from './b';\\n")
    True
    >>> is_reexport_text("src/index.ts", "export function run() {\\n  return 1;\\n}\\n")
    False
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not _REEXPORT_FILES.match(name):
        return False
    return _reexport_lines(text)


@lru_cache(maxsize=4096)
def _reexport_lines(text: str) -> bool:
    """Cached by text (a barrel's chunks come back query after query); stops at the first line
    past the share of other lines a barrel may hold."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not _COMMENT_LINE.match(ln)]
    if not lines:
        return False
    allowed = (1 - REEXPORT_SHARE) * len(lines)
    misses = 0
    for ln in lines:
        if not _REEXPORT_LINE.match(ln):
            misses += 1
            if misses > allowed:
                return False
    return True


@lru_cache(maxsize=4096)
def asked_roles(question: str) -> frozenset[str]:
    """The roles ``question`` asks for: their files then weigh as the implementation's.

    >>> sorted(asked_roles("How is the flag parser tested?"))
    ['test']
    >>> sorted(asked_roles("How do I install and configure it?"))
    ['config', 'prose']
    >>> sorted(asked_roles("Where is the retry delay computed?"))
    []
    """
    lowered = question.lower()
    return frozenset(role for role, pattern in _ASKS.items() if pattern.search(lowered))
