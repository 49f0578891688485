"""Source-type awareness: does a query look like it asks about code, and per-type score floors.

``code_query_score`` adds up evidence, as code-search front ends do (Sourcegraph, GitHub code
search treat identifiers and punctuation as a signal of a code query):

* **2 points** for each distinct *identifier or syntax* sign: camelCase / PascalCase with an
  inner capital (``getFileName``, ``DataFrame``), snake_case (``read_csv``), a dotted identifier
  (``os.path``, ``np.array``), a call or an operator from code (``()``, ``::``, ``->``, ``=>``,
  ``==``, ``!=``, ``[]``, ``{}``), a ``--flag`` or a file name with a code extension (``setup.py``);
* **2 points** for each distinct name of a programming language or library that is not also an
  English word (``python``, ``java``, ``numpy``, ``pandas``, ``django``...), and each distinct piece
  of programming jargon that prose does not use (``def``, ``regex``, ``kwargs``, ``stdout``,
  ``dict``, ``tuple``, ``substring``, ``traceback``...);
* **1 point** for each distinct programming word that prose also uses (``function``, ``method``,
  ``class``, ``return``, ``import``, ``exception``, ``string``, ``list``, ``loop``, ``json``...)
  and each language or library name that is also an English word (``rust``, ``ruby``, ``swift``).

* Russian: **2 points** for ``код`` (code: "объясни код"), **1 point** each for ``метод``,
  ``класс``, ``функция`` (method, class, function), inflected forms included.

A query is code when its score reaches ``CODE_QUERY_THRESHOLD`` = 2: one identifier, syntax sign,
language name or jargon word, or two code words. One code word alone is not enough (``"transfer function of
a wing"``, ``"method of characteristics"`` stay text). The trade-off to know: a query that names a
language is routed to code even when a document would answer it (``"python installation guide"``),
so leave ``features.routing`` off for corpora where such questions are about prose.
A space before ``(`` is prose, not a call; ``i.e.`` / ``e.g.`` are not dotted identifiers.
"""

from __future__ import annotations

import re

from hybrid_rag.filters import Compare, FilterExpr
from hybrid_rag.types import SourceType

CODE_QUERY_THRESHOLD = 2.0
STRONG, WEAK = 2.0, 1.0


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# programming jargon that prose does not use: strong
_JARGON = _words("""
    def regex regexp regexes kwargs args stdout stdin stderr dict tuple bool boolean str int hashmap
    substring iterator decorator callback subprocess printf enum struct async await dataframe ndarray
    traceback stacktrace nullptr namespace docstring unicode utf8 deserialize
""")
# programming words that prose also uses: weak
_CODE_WORDS = _words("""
    function func fn method class object instance constructor return import module package library
    exception raise throw try catch lambda variable var const string integer float double char list
    dictionary array json xml yaml csv sql api http https url uri endpoint filename argument arguments
    param compile compiler runtime debug null nil none true false loop iterate generator thread threads
    print bytes byte encode decode parse parser serialize timestamp datetime append concatenate split
    sort sorted interface inheritance subclass repo git script cli command bash shell terminal syntax
""")
# names of languages and libraries that are not English words: strong
_LANGUAGES = _words("""
    python python2 python3 cpython ipython jupyter pythonic wxpython tkinter pyqt java javascript
    typescript golang php perl kotlin scala haskell lua matlab c++ c# cpp csharp objective-c numpy pandas
    scipy matplotlib seaborn django flask fastapi sklearn scikit-learn pytorch tensorflow keras jquery
    nodejs npm conda sqlite mysql postgres postgresql mongodb redis pyspark vba powershell sqlalchemy
    pytest jvm dotnet
""")
# names of languages and libraries that are also English words: weak
_AMBIGUOUS_LANGUAGES = _words("rust ruby swift spark react node torch excel pip go")
_CODE_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|java|go|rs|rb|php|c|h|cc|cpp|hpp|cs|kt|swift|sh|sql|json|yaml|yml|toml"
)
_SIGNS = (
    ("camelCase", re.compile(r"\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b")),
    ("PascalCase", re.compile(r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")),
    ("snake_case", re.compile(r"\b_*[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b")),
    ("dotted", re.compile(rf"\b[A-Za-z_]\w+\.(?!(?:{_CODE_EXTENSIONS})\b)[A-Za-z_]\w*(?:\(|\b)")),
    ("file", re.compile(rf"\b[\w-]+\.(?:{_CODE_EXTENSIONS})\b")),
    ("call", re.compile(r"\w\([\w\s,'\"=*.]*\)|\(\)")),
    ("operator", re.compile(r"::|->|=>|==|!=|\[\]|\{\}|\+=|&&|\|\|")),
    ("flag", re.compile(r"(?:^|\s)--[a-z][\w-]+")),
)
_WORD = re.compile(r"c\+\+|c#|objective-c|scikit-learn|[a-z][a-z0-9]*")
# Russian, as the code-search prompt hybrid-rag replaces detects it: "код" (code, and so "объясни
# код", explain the code) strong; "метод", "класс", "функция" weak like method, class, function.
# Matched by stem, so inflected forms count: кода, коде, методы, класса, функции, функцию.
_RUSSIAN = (
    ("код", STRONG, re.compile(r"(?<!\w)код(?:а|е|у|ом|ы|ов)?(?!\w)")),
    ("метод", WEAK, re.compile(r"(?<!\w)метод\w{0,3}(?!\w)")),
    ("класс", WEAK, re.compile(r"(?<!\w)класс\w{0,3}(?!\w)")),
    ("функция", WEAK, re.compile(r"(?<!\w)функци\w{0,3}(?!\w)")),
)


def code_query_evidence(text: str) -> dict[str, float]:
    """What in ``text`` looks like code, and what each sign is worth (for traces and tests)."""
    evidence: dict[str, float] = {}
    for name, pattern in _SIGNS:
        if pattern.search(text):
            evidence[name] = STRONG
    for word in set(_WORD.findall(text.lower())):
        if word in _LANGUAGES or word in _JARGON:
            evidence[word] = STRONG
        elif word in _CODE_WORDS or word in _AMBIGUOUS_LANGUAGES:
            evidence[word] = WEAK
    lowered = text.lower()
    for name, points, pattern in _RUSSIAN:
        if pattern.search(lowered):
            evidence[name] = points
    return evidence


def code_query_score(text: str) -> float:
    """The sum of ``code_query_evidence``."""
    return sum(code_query_evidence(text).values())


def looks_like_code_query(text: str, threshold: float = CODE_QUERY_THRESHOLD) -> bool:
    """Whether a query asks about code (see the module docstring for the score).

    >>> looks_like_code_query("how to flatten a list in python"), looks_like_code_query("getFileName")
    (True, True)
    >>> looks_like_code_query("what is the lift of a swept wing at transonic speeds")
    False
    """
    return code_query_score(text) >= threshold


def code_route_filter(text: str, threshold: float = CODE_QUERY_THRESHOLD) -> FilterExpr | None:
    """``source_type = code`` for a query that looks like code, else None (search everything)."""
    return (
        Compare("source_type", "=", SourceType.CODE.value) if looks_like_code_query(text, threshold) else None
    )
