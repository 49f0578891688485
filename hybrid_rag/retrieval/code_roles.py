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

TEST, EXAMPLE, BENCHMARK, FIXTURE = "test", "example", "benchmark", "fixture"
VENDORED, GENERATED, MINIFIED, REEXPORT = "vendored", "generated", "minified", "reexport"
PROSE, CONFIG = "prose", "config"
ROLES = (TEST, EXAMPLE, BENCHMARK, FIXTURE, VENDORED, GENERATED, MINIFIED, REEXPORT, PROSE, CONFIG)

# folder names, compared case-insensitively (Swift's ``Tests/``, Java's ``src/test/java``)
_FOLDERS: dict[str, str] = {
    **dict.fromkeys(("test", "tests", "testing", "__tests__", "spec", "specs", "unittests"), TEST),
    **dict.fromkeys(("example", "examples", "demo", "demos", "sample", "samples"), EXAMPLE),
    **dict.fromkeys(("bench", "benches", "benchmark", "benchmarks"), BENCHMARK),
    **dict.fromkeys(("fixture", "fixtures", "testdata", "__fixtures__", "__mocks__", "mocks"), FIXTURE),
    **dict.fromkeys(
        (
            "vendor",
            "vendored",
            "third_party",
            "third-party",
            "thirdparty",
            "node_modules",
            "bower_components",
        ),
        VENDORED,
    ),
    **dict.fromkeys(("generated", "__generated__", "gen-src"), GENERATED),
}
# file names (the last segment); the first pattern that matches decides
_FILES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), role)
    for pattern, role in (
        (r"\.min\.(?:js|css|mjs)$|\.bundle\.js$", MINIFIED),
        (r"\.d\.(?:ts|mts|cts)$|\.pyi$", REEXPORT),
        (
            r"_pb2(?:_grpc)?\.py$|\.pb\.(?:go|cc|h)$|\.pb\.gw\.go$|_generated\.\w+$|\.gen\.\w+$|\.g\.dart$"
            r"|\.designer\.cs$|_pb\.(?:js|ts)$",
            GENERATED,
        ),
        (
            r"^test_[^/]*\.py$|_tests?\.(?:py|go|rs|c|cc|cpp|exs?|dart|zig)$|\.(?:test|spec)\.[cm]?[jt]sx?$"
            r"|_spec\.rb$|_test\.rb$|^conftest\.py$|(?:Tests?|Spec|IT)\.(?:java|kt|scala|cs|swift|groovy|php)$"
            r"|Test\.php$|_test\.(?:cpp|hpp)$",
            TEST,
        ),
        (r"_bench(?:mark)?\.\w+$|^bench_[^/]*\.\w+$", BENCHMARK),
        (r"^example_[^/]*\.\w+$|_example\.\w+$", EXAMPLE),
        (
            r"\.(?:md|markdown|rst|txt|adoc|asciidoc|org|rdoc|pod|tex|html?)$"
            r"|^(?:readme|changelog|changes|history|license|licence|copying|authors|contributing|notice|news)"
            r"(?:\.\w+)?$",
            PROSE,
        ),
        (
            r"\.(?:ya?ml|json|jsonc|json5|toml|ini|cfg|conf|properties|lock|xml|plist|editorconfig|env)$"
            r"|^(?:makefile|dockerfile|\.\w+rc|setup\.cfg|go\.mod|go\.sum|cargo\.lock)$",
            CONFIG,
        ),
    )
)
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


@lru_cache(maxsize=1 << 16)
def path_role(path: str) -> str | None:
    """The role of the file at ``path`` (``None``: implementation, or nothing this module knows).

    >>> [path_role(p) for p in ("pkg/flag_test.go", "spec/parser_spec.rb", "src/test/java/A.java")]
    ['test', 'test', 'test']
    >>> [path_role(p) for p in ("lib/index.d.ts", "README.md", "examples/basic.py", "src/core.rs")]
    ['reexport', 'prose', 'example', None]
    """
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return None
    name = parts[-1]
    lowered = name.lower()
    for pattern, role in _FILES:
        if pattern.search(name) or pattern.search(lowered):
            return role
    for folder in parts[:-1]:
        role = _FOLDERS.get(folder.lower())
        if role is not None:
            return role
    return None


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
