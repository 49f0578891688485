"""Embedders: the fake one, prefix rules, long-text windows, and (slow) the real default model."""

from __future__ import annotations

import itertools
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybrid_rag.code.definition_windows import definition_window_texts
from hybrid_rag.errors import ModelError
from hybrid_rag.models.auto import AutoEmbedder
from hybrid_rag.models.embedders import (
    BGE_QUERY_INSTRUCTION,
    PACKAGED_MODEL,
    FakeEmbedder,
    SentenceTransformerEmbedder,
    prefixes_for,
)
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings
from hybrid_rag.vectors import mean_pool, window_spans, window_texts

# -- FakeEmbedder ----------------------------------------------------------------------------


def test_fake_embedder_is_a_normalised_float32_embedder() -> None:
    emb = FakeEmbedder(dimension=32)
    assert isinstance(emb, Embedder)
    vectors = emb.embed_passages(["alpha beta", "gamma", "", "?!"])
    assert vectors.shape == (4, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_fake_embedder_is_deterministic_across_processes() -> None:
    here = FakeEmbedder().embed_queries(["Faiss and BM25 together"])[0]
    code = (
        "from hybrid_rag.models.embedders import FakeEmbedder;"
        "print(FakeEmbedder().embed_queries(['Faiss and BM25 together'])[0].tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    np.testing.assert_array_equal(np.array(eval(out), dtype=np.float32), here)


def test_fake_embedder_shared_words_are_similar() -> None:
    texts = ["vector index search", "Search VECTOR index", "search the vector index", "ripe mango"]
    q, same, near, far = FakeEmbedder().embed_queries(texts)
    assert q @ same > 0.999  # same words, other order and case
    assert q @ near > 0.75  # three of four words shared
    assert abs(q @ far) < 0.5


def test_fake_embedder_ignores_case_and_punctuation() -> None:
    a, b = FakeEmbedder().embed_passages(["Hello, World!", "hello world"])
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_fake_embedder_textless_input_gets_one_fixed_unit_vector() -> None:
    empty, punct, word = FakeEmbedder().embed_passages(["", "... !!", "word"])
    np.testing.assert_array_equal(empty, punct)
    assert abs(float(np.linalg.norm(empty)) - 1.0) < 1e-6
    assert not np.allclose(empty, word)


def test_fake_embedder_empty_list_gives_zero_rows() -> None:
    assert FakeEmbedder(dimension=16).embed_passages([]).shape == (0, 16)
    assert FakeEmbedder(dimension=16).embed_queries([]).shape == (0, 16)


def test_fake_embedder_rejects_bad_dimension() -> None:
    with pytest.raises(ValueError):
        FakeEmbedder(dimension=0)


# -- factory and cheap construction ----------------------------------------------------------


def test_make_embedder_fake_and_real() -> None:
    for name in ("fake", "fake-hash", "FAKE"):
        assert isinstance(make_embedder(EmbeddingSettings(model=name)), FakeEmbedder)
    real = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))
    assert isinstance(real, SentenceTransformerEmbedder)
    assert real._model is None  # constructors are cheap: nothing loaded yet
    default = make_embedder(EmbeddingSettings())  # embedding.model: auto, nothing chosen yet
    assert isinstance(default, AutoEmbedder) and default.choice is None and default._inner is None


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        (EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL), PACKAGED_MODEL + "#defs2"),
        (EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, window_split="tokens"), PACKAGED_MODEL),
        (
            EmbeddingSettings(model="sentence-transformers/all-MiniLM-L6-v2", window_split="tokens"),
            PACKAGED_MODEL,
        ),
        (
            EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, long_text="truncate"),
            PACKAGED_MODEL + "#truncate",
        ),
        (
            EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, window_overlap_tokens=8, window_split="tokens"),
            PACKAGED_MODEL + "#overlap=8",
        ),
        (
            EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, window_overlap_tokens=8),
            PACKAGED_MODEL + "#overlap=8#defs2",
        ),
        (
            EmbeddingSettings(
                model=DEFAULT_EMBEDDING_MODEL, window_split="definitions", long_text="truncate"
            ),
            PACKAGED_MODEL + "#truncate",
        ),
        (
            EmbeddingSettings(
                model="intfloat/e5-small-v2", passage_prefix="passage: ", window_split="tokens"
            ),
            "intfloat/e5-small-v2",
        ),
    ],
)
def test_model_name_records_what_changes_the_vectors(settings: EmbeddingSettings, name: str) -> None:
    assert SentenceTransformerEmbedder(settings).model_name == name


def test_model_name_records_a_prefix_override() -> None:
    name = SentenceTransformerEmbedder(
        EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, query_prefix="q: ")
    ).model_name
    assert re.fullmatch(re.escape(PACKAGED_MODEL) + r"#defs2#prefix=[0-9a-f]{8}", name)


def test_missing_model_folder_is_a_model_error() -> None:
    emb = SentenceTransformerEmbedder(EmbeddingSettings(model="/no/such/model/folder"))
    with pytest.raises(ModelError, match="folder not found"):
        emb.embed_queries(["x"])


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Any socket connect fails and is recorded."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield attempts


def test_unknown_model_fails_fast_offline_with_a_clear_message(no_network: list[object]) -> None:
    emb = SentenceTransformerEmbedder(EmbeddingSettings(model="no-such-org/no-such-embedder-xyz"))
    start = time.perf_counter()
    with pytest.raises(ModelError) as info:
        emb.embed_passages(["x"])
    assert time.perf_counter() - start < 5
    assert str(info.value) == (
        "embedding model 'no-such-org/no-such-embedder-xyz' is not in the local cache and cannot be "
        "downloaded here; set embedding.model to a local folder or to all-MiniLM-L6-v2"
    )
    assert no_network == []


# -- prefixes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("BAAI/bge-small-en-v1.5", (BGE_QUERY_INSTRUCTION, "")),
        ("BAAI/bge-large-en-v1.5", (BGE_QUERY_INSTRUCTION, "")),
        ("/models/bge-base-en-v1.5/", (BGE_QUERY_INSTRUCTION, "")),
        ("BAAI/bge-m3", ("", "")),
        ("BAAI/bge-small-zh-v1.5", ("", "")),
        ("intfloat/e5-base-v2", ("query: ", "passage: ")),
        ("intfloat/multilingual-e5-small", ("query: ", "passage: ")),
        ("intfloat/multilingual-e5-large-instruct", ("", "")),
        ("all-MiniLM-L6-v2", ("", "")),
        ("sentence-transformers/all-mpnet-base-v2", ("", "")),
        ("someone/hoe5-model", ("", "")),
    ],
)
def test_prefixes_for(model: str, expected: tuple[str, str]) -> None:
    assert prefixes_for(model) == expected


def test_settings_prefixes_override_the_family_rule() -> None:
    emb = SentenceTransformerEmbedder(EmbeddingSettings(model="intfloat/e5-small-v2", query_prefix=""))
    assert (emb.query_prefix, emb.passage_prefix) == ("", "passage: ")


# -- windows ---------------------------------------------------------------------------------


def whitespace_offsets(text: str) -> list[tuple[int, int]]:
    """A fake tokenizer: one token per whitespace-separated word, with character offsets."""
    return [m.span() for m in re.finditer(r"\S+", text)]


def test_window_spans_small_cases() -> None:
    assert window_spans(0, 4, 1) == [(0, 0)]
    assert window_spans(4, 4, 1) == [(0, 4)]
    assert window_spans(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert window_spans(11, 4, 1) == [(0, 4), (3, 7), (6, 10), (7, 11)]
    assert window_spans(9, 4, 0) == [(0, 4), (4, 8), (5, 9)]


@pytest.mark.parametrize(("window", "overlap"), [(0, 0), (4, 4), (4, -1)])
def test_window_spans_rejects_bad_parameters(window: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        window_spans(10, window, overlap)


@given(st.integers(1, 400), st.integers(1, 60), st.data())
def test_window_spans_cover_everything_with_full_overlapping_windows(
    n: int, window: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, window - 1))
    spans = window_spans(n, window, overlap)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(e - s == min(window, n) for s, e in spans)
    for (s1, e1), (s2, _) in itertools.pairwise(spans):
        assert s1 < s2 and e1 - s2 >= overlap  # moves forward, overlaps at least `overlap`


def test_window_texts_slices_the_original_text() -> None:
    text = "w0 w1  w2 w3\nw4 w5 w6 w7 w8 w9"
    pieces = window_texts(text, whitespace_offsets(text), 4, 1)
    assert pieces == ["w0 w1  w2 w3", "w3\nw4 w5 w6", "w6 w7 w8 w9"]
    assert window_texts("short text", whitespace_offsets("short text"), 4, 1) == ["short text"]
    assert window_texts("", [], 4, 1) == [""]


def _function(name: str, words: int, decorator: str = "") -> str:
    body = " ".join(f"{name}_{i}" for i in range(words))
    return f"{decorator}def {name}(x):\n    return [{body}]\n"


def test_definition_windows_hold_one_definition_each() -> None:
    text = "import os\nimport re\n\n" + _function("alpha", 20) + "\n" + _function("beta", 20, "@cache\n")
    text += "\nclass Gamma:\n    " + _function("delta", 20).replace("\n", "\n    ")
    pieces = definition_window_texts(text, whitespace_offsets(text), 40, 8, min_tokens=3)
    assert [p.split()[0] for p in pieces] == ["import", "def", "@cache", "class"]
    assert pieces[3].startswith("class Gamma:\n    def delta(x):")  # a bare header joins what follows
    assert "alpha_19" in pieces[1] and "beta_0" not in pieces[1]  # no window runs into the next one
    assert pieces[2].startswith("@cache\ndef beta(x):")  # the decorator stays with its function
    token_windows = window_texts(text, whitespace_offsets(text), 40, 8)
    assert any("alpha_19" in w and "beta_0" in w for w in token_windows)  # what tokens windows do


def test_definition_windows_cut_a_long_definition_and_keep_short_text_whole() -> None:
    text = _function("long", 100) + _function("tiny", 1)
    pieces = definition_window_texts(text, whitespace_offsets(text), 30, 5, min_tokens=8)
    assert len(pieces) > 3 and all(len(p.split()) <= 30 for p in pieces)
    assert "tiny" in pieces[-1] and "long_99" in pieces[-1]  # too short alone: joined to the one before
    short = _function("a", 3)
    assert definition_window_texts(short, whitespace_offsets(short), 30, 5) == [short]
    prose = " ".join(["words"] * 100)  # no definition: the token windows
    offsets = whitespace_offsets(prose)
    assert definition_window_texts(prose, offsets, 30, 5) == window_texts(prose, offsets, 30, 5)


def test_scoped_definition_windows_are_headed_by_what_encloses_them() -> None:
    method = "    def exit(self, code):\n        raise Exit(code)\n"
    long_body = "".join(f"        step_{i} = {i}\n" for i in range(30))
    text = "import os\n\nclass Context:\n    x = 1\n\n" + method + "\n    def run(self):\n" + long_body
    offsets = whitespace_offsets(text)
    pieces = definition_window_texts(text, offsets, 40, 4, min_tokens=3, scopes=True)
    exit_window = next(p for p in pieces if "raise Exit" in p)
    assert exit_window.startswith("class Context:\ndef exit(self, code):")  # the method knows its class
    run_windows = [p for p in pieces if "step_" in p]
    assert len(run_windows) > 1
    assert run_windows[0].startswith("class Context:\ndef run(self):")
    assert all(w.startswith("class Context:\ndef run(self):\n") for w in run_windows[1:])  # later windows too
    assert all(len(w.split()) <= 40 for w in pieces)  # the heading counts against the window
    covered = set(" ".join(pieces).split())
    assert covered == set(text.split())
    plain = definition_window_texts(text, offsets, 40, 4, min_tokens=3)
    assert not any(p.startswith("class Context:\ndef exit") for p in plain)  # without scopes: no heading


def test_scoped_windows_of_prose_are_the_token_windows() -> None:
    prose = " ".join(f"word{i}" for i in range(500))
    offsets = whitespace_offsets(prose)
    assert definition_window_texts(prose, offsets, 64, 8, scopes=True) == window_texts(prose, offsets, 64, 8)


@given(
    st.lists(st.sampled_from(["def f():", "    x = 1", "class A:", "@d", "", "y", "  return y"]), max_size=60)
)
def test_definition_windows_cover_every_token_within_the_limit(lines: list[str]) -> None:
    text = "\n".join(lines)
    offsets = whitespace_offsets(text)
    pieces = definition_window_texts(text, offsets, 12, 3, min_tokens=4)
    assert all(len(p.split()) <= max(12, len(offsets) if len(offsets) <= 12 else 12) for p in pieces)
    assert sorted(set(" ".join(pieces).split())) == sorted(set(text.split()))


@given(
    st.lists(
        st.sampled_from(
            ["def f():", "    def g():", "        x = 1", "class A:", "@d", "", "y", "    return y"]
        ),
        max_size=80,
    )
)
def test_scoped_windows_cover_every_token_and_headings_fit_the_window(lines: list[str]) -> None:
    text = "\n".join(lines)
    offsets = whitespace_offsets(text)
    pieces = definition_window_texts(text, offsets, 16, 3, min_tokens=2, scopes=True)
    assert all(len(p.split()) <= 16 for p in pieces)  # a window's heading counts against it
    assert sorted(set(" ".join(pieces).split())) == sorted(set(text.split()))


def test_mean_pool_averages_each_passages_windows_and_renormalises() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    pooled = mean_pool(vectors, [0, 0, 1], 2)
    np.testing.assert_allclose(pooled, [[2**-0.5, 2**-0.5], [0.6, 0.8]], rtol=1e-6)
    assert pooled.dtype == np.float32


def test_mean_pool_degenerate_cases() -> None:
    opposite = np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(mean_pool(opposite, [0, 0], 1), [[1.0, 0.0]])  # first window stands in
    assert mean_pool(np.zeros((0, 3), dtype=np.float32), [], 0).shape == (0, 3)
    with pytest.raises(ValueError):
        mean_pool(opposite, [0, 2], 2)  # passage 1 has no window, owner 2 out of range
    with pytest.raises(ValueError):
        mean_pool(opposite, [0], 1)


# -- the real default model (slow) -----------------------------------------------------------

HEAD = (
    "Knead the dough for ten minutes until it is smooth and elastic, then let it rise in a warm "
    "kitchen. Bake the bread in a hot oven with a tray of water for a crisp crust. Sourdough needs a "
    "lively starter fed with flour and water every day. "
)
TAIL = (
    "Volcanic eruptions happen when magma rises through the crust and gas pressure builds up. "
    "Lava flows, ash clouds and pyroclastic surges spread from the vent of the volcano. "
)
LONG = HEAD * 9 + TAIL * 6  # ~470 word pieces of baking, then ~200 of volcanoes
TAIL_QUERY = "how do volcanoes erupt and produce lava flows"


@pytest.fixture(scope="module")
def windows() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))


@pytest.fixture(scope="module")
def truncate() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, long_text="truncate"))


@pytest.mark.slow
def test_default_model_loads_offline(no_network: list[object]) -> None:
    emb = SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL))
    assert emb.dimension == 384
    assert emb.max_seq_length == 256
    assert no_network == []


@pytest.mark.slow
def test_real_embeddings_are_normalised_rows(windows: SentenceTransformerEmbedder) -> None:
    vectors = windows.embed_passages(["a cat sat on the mat", "jet engines", LONG])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert windows.embed_passages([]).shape == (0, 384)
    assert windows.embed_queries([]).shape == (0, 384)


@pytest.mark.slow
def test_real_paraphrase_is_closer_than_unrelated(windows: SentenceTransformerEmbedder) -> None:
    q = windows.embed_queries(["How do I reset my password?"])[0]
    para, other = windows.embed_passages(
        ["Steps to change a forgotten password", "The tides follow the moon"]
    )
    assert q @ para > q @ other + 0.2


@pytest.mark.slow
def test_short_passages_are_identical_in_both_modes(
    windows: SentenceTransformerEmbedder, truncate: SentenceTransformerEmbedder
) -> None:
    texts = ["a short passage", HEAD]
    np.testing.assert_allclose(windows.embed_passages(texts), truncate.embed_passages(texts), atol=1e-6)


@pytest.mark.slow
def test_long_passage_windows_reach_the_tail(
    windows: SentenceTransformerEmbedder, truncate: SentenceTransformerEmbedder
) -> None:
    assert windows.tokenizer_count(LONG) > 600 > windows.max_seq_length  # type: ignore[operator]
    win = windows.embed_passages([LONG])[0]
    cut = truncate.embed_passages([LONG])[0]
    assert float(win @ cut) < 0.99
    query = windows.embed_queries([TAIL_QUERY])[0]
    assert query @ win > query @ cut + 0.1


@pytest.mark.slow
def test_windows_batch_keeps_passage_order(windows: SentenceTransformerEmbedder) -> None:
    batch = windows.embed_passages(["first short one", LONG, "another short one", LONG[::-1]])
    alone = np.vstack([windows.embed_passages([t]) for t in ["first short one", LONG, "another short one"]])
    np.testing.assert_allclose(batch[:3], alone, atol=1e-5)


@pytest.mark.slow
def test_every_window_keeps_the_prefix_and_fits_the_model() -> None:
    emb = SentenceTransformerEmbedder(
        EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, passage_prefix="passage: ")
    )
    windows, owners = emb.passage_windows([LONG, "short"])
    assert owners == [0] * (len(owners) - 1) + [1] and len(owners) >= 4
    assert windows[-1] == "passage: short"
    assert all(w.startswith("passage: ") for w in windows)
    limit = emb.max_seq_length - 2  # type: ignore[operator]  # [CLS] and [SEP]
    assert all(emb.tokenizer_count(w) <= limit + 1 for w in windows)  # +1: a re-tokenised edge
    assert windows[0][len("passage: ") :].startswith(LONG[:40])
    assert LONG.rstrip().endswith(windows[-2][-40:])


@pytest.mark.slow
def test_threads_setting_sets_torchs_thread_count_when_the_model_loads() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        emb = SentenceTransformerEmbedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, threads=1))
        assert emb.embed_queries(["jet engines"]).shape == (1, 384)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads"):
        EmbeddingSettings(threads=0)
