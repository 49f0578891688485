"""What a file is for in a repository, read from its path alone: its role.

``path_role`` names the role of a path read relative to the ingested root (language-aware:
``_test.go``, ``test_*.py``, ``*_spec.rb``, ``spec/``, ``__tests__``, ``src/test/java``,
``FooTests.cs``, Swift's ``Tests/``, ``vendor/``, ``*.min.js``, ``*_pb2.py``); ``None`` is the
implementation. A low layer, so that the ingest (what to embed first, ``ingest/embed_order.py``)
and the ranking (``retrieval/code_roles.py``, ``retrieval/code_rank.py``) read one rule.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hybrid_rag.paths import display_path

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


SOURCE = "source"  # the implementation: a path no role of ``ROLES`` claims
# translation catalogues (``locale/de/LC_MESSAGES/django.po``): a role for the embedding order
# only (the ranking's ``path_role`` does not know it): Django's 4,486 ``.po`` chunks outnumber its
# Python ones two to one, and a question about the code is not answered by a translation
LOCALE = "locale"
EMBED_ROLES = (SOURCE, *ROLES, LOCALE)  # the names ``ingest.embed_order`` and ``ingest.embed_never`` take
# ``ingest.embed_order``'s default, and where the roles a configured order leaves out come: what
# questions hit (the implementation, its docs and config) first, what repeats it after, what is
# not the project's own code last
EMBED_ORDER = (
    SOURCE, PROSE, CONFIG, REEXPORT, TEST, EXAMPLE, BENCHMARK, FIXTURE, LOCALE, VENDORED, GENERATED, MINIFIED,
)  # fmt: skip
_LOCALE_FILES = re.compile(r"\.(?:po|pot|xlf|xliff)$", re.IGNORECASE)
_LOCALE_FOLDERS = frozenset(("locale", "locales", "i18n", "l10n"))


def chunk_role(path: str, root: str | None) -> str:
    """The role of a stored ``path`` read relative to the ingested ``root`` (as results show it, so
    a root folder named ``tests`` makes no file a test), ``SOURCE`` for the implementation; a
    translation catalogue that no other role claims is ``LOCALE``.

    >>> [chunk_role(p, "/r") for p in ("/r/src/a.py", "/r/tests/test_a.py", "/r/vendor/x.js")]
    ['source', 'test', 'vendored']
    >>> chunk_role("/r/django/conf/locale/de/LC_MESSAGES/django.po", "/r")
    'locale'
    """
    shown = display_path(path, root)
    role = path_role(shown)
    if role is not None:
        return role
    parts = shown.replace("\\", "/").split("/")
    if _LOCALE_FILES.search(parts[-1]) or any(p.lower() in _LOCALE_FOLDERS for p in parts[:-1]):
        return LOCALE
    return SOURCE
