"""NearDuplicateFilter: exact and near duplicates, first occurrence kept, verified LSH candidates."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH

from hybrid_rag.errors import ConfigError
from hybrid_rag.ingest.dedupe import SEED, NearDuplicateFilter, combine_shingles, shingles, token_hash, tokens
from hybrid_rag.settings import DedupeSettings

VOCAB = [f"w{i}x" for i in range(3000)]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _chunk(rng: random.Random, n: int = 600) -> str:
    return " ".join(rng.choices(VOCAB, k=n))


def _edit(text: str, fraction: float, rng: random.Random) -> str:
    words = text.split()
    for i in rng.sample(range(len(words)), max(1, round(fraction * len(words)))):
        words[i] = rng.choice(VOCAB)
    return " ".join(words)


def _pairs(texts: list[str]) -> list[tuple[str, str]]:
    return [(_sha(t), t) for t in texts]


def _hashes(text: str, size: int) -> np.ndarray:
    return combine_shingles(np.array([token_hash(w) for w in tokens(text)], dtype=np.uint64), size)


def test_tokens_and_shingles() -> None:
    assert tokens("Foo-bar, BAZ_1 été!") == ["foo", "bar", "baz_1", "été"]
    assert shingles("a b c d", 3) == {"a b c", "b c d"}
    assert shingles("B a", 3) == {"a", "b"}  # shorter than a shingle: the set of its tokens
    assert shingles("...", 3) == set()


@pytest.mark.parametrize("size", [1, 3, 5])
def test_shingle_hashes_match_the_string_shingles(size: int) -> None:
    rng = random.Random(size)
    for n in (1, 2, 4, 5, 6, 40, 600):
        text = " ".join(rng.choices(VOCAB[:30], k=n))  # a small vocabulary: many repeated shingles
        assert len(_hashes(text, size)) == len(shingles(text, size))
    a, b = "one two three four five six", "One, two; THREE four five six."
    assert np.array_equal(_hashes(a, 3), _hashes(b, 3))
    assert not np.array_equal(_hashes(a, 3), _hashes("one two three four six five", 3))


def test_minhash_equals_datasketch_update_batch() -> None:
    values = np.random.default_rng(0).integers(0, 2**32, size=700, dtype=np.uint64).astype(np.uint32)
    ours = NearDuplicateFilter(DedupeSettings(num_perm=64)).minhash(values)
    ref = MinHash(num_perm=64, seed=SEED, hashfunc=int)
    ref.update_batch(values)
    assert np.array_equal(ours.hashvalues, ref.hashvalues)
    assert ours.jaccard(ref) == 1.0


def test_estimated_jaccard_is_close_to_the_true_one() -> None:
    rng = random.Random(4)
    f = NearDuplicateFilter(DedupeSettings(num_perm=256))
    base = _chunk(rng)
    for fraction in (0.01, 0.05, 0.2):
        other = _edit(base, fraction, rng)
        sa, sb = shingles(base, 5), shingles(other, 5)
        true = len(sa & sb) / len(sa | sb)
        est = f.signature(base).jaccard(f.signature(other))
        assert abs(est - true) < 0.08, (fraction, true, est)


def test_exact_and_formatting_duplicates_keep_the_first_occurrence() -> None:
    rng = random.Random(1)
    a, b, c = _chunk(rng), _chunk(rng), _chunk(rng)
    reformatted = a.upper().replace(" ", "  ,\n")  # same words: Jaccard 1
    f = NearDuplicateFilter(DedupeSettings())
    new = _pairs([b, reformatted, c, b, a])
    assert f.find_duplicates(new, existing=_pairs([a])) == {
        _sha(reformatted): _sha(a),
        _sha(a): _sha(a),  # an exact repeat of an existing chunk maps to itself
    }
    # with no existing chunks the first of the near-duplicate pair is kept; b's repeat is one chunk
    assert f.find_duplicates(new) == {_sha(a): _sha(reformatted)}


def test_edited_copies_are_caught_and_distinct_chunks_are_not() -> None:
    rng = random.Random(2)
    base = [_chunk(rng) for _ in range(60)]
    distinct = [_chunk(rng) for _ in range(60)]
    edited = [_edit(t, 0.01, rng) for t in base]
    f = NearDuplicateFilter(DedupeSettings(threshold=0.8))
    found = f.find_duplicates(_pairs(edited + distinct), existing=_pairs(base))
    recall = sum(found.get(_sha(e)) == _sha(t) for e, t in zip(edited, base, strict=True)) / len(base)
    assert recall >= 0.95
    assert not any(_sha(t) in found for t in distinct)


def test_the_default_threshold_keeps_copies_with_five_percent_of_words_changed() -> None:
    """The documented trade-off: at 0.9 with 5-word shingles, 5 % edits are J ≈ 0.6, kept apart."""
    rng = random.Random(3)
    base = [_chunk(rng) for _ in range(30)]
    edited = [_edit(t, 0.05, rng) for t in base]
    assert NearDuplicateFilter(DedupeSettings()).find_duplicates(_pairs(edited), _pairs(base)) == {}
    loose = NearDuplicateFilter(DedupeSettings(threshold=0.5, shingle_words=3))
    assert len(loose.find_duplicates(_pairs(edited), _pairs(base))) >= 27


def test_dropped_chunks_map_to_kept_ones_and_the_most_similar_wins() -> None:
    rng = random.Random(5)
    a = _chunk(rng)
    a1 = _edit(a, 0.005, rng)
    a2 = _edit(a1, 0.005, rng)  # closer to a1, but a1 is dropped: it must map to a kept chunk
    f = NearDuplicateFilter(DedupeSettings(threshold=0.8))
    found = f.find_duplicates(_pairs([a, a1, a2]))
    assert found == {_sha(a1): _sha(a), _sha(a2): _sha(a)}
    b = _chunk(rng)
    far, near = _edit(b, 0.03, rng), _edit(b, 0.002, rng)  # existing chunks are all kept
    loose = NearDuplicateFilter(DedupeSettings(threshold=0.6))
    assert loose.find_duplicates(_pairs([b]), existing=_pairs([far, near])) == {_sha(b): _sha(near)}
    twin = b.replace(" ", "\n")  # the same shingles as b: a tie, so the earlier kept chunk wins
    assert loose.find_duplicates(_pairs([b.upper()]), existing=_pairs([b, twin])) == {
        _sha(b.upper()): _sha(b)
    }
    assert loose.find_duplicates(_pairs([b.upper()]), existing=_pairs([twin, b])) == {
        _sha(b.upper()): _sha(twin)
    }


def test_lsh_candidates_are_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if the LSH index returned every stored chunk, only those over the threshold count."""
    monkeypatch.setattr(MinHashLSH, "query", lambda self, m: list(self.keys.keys()))
    rng = random.Random(6)
    texts = [_chunk(rng) for _ in range(20)]
    copy = texts[7].replace(" ", "\t")
    found = NearDuplicateFilter(DedupeSettings()).find_duplicates(_pairs([*texts, copy]))
    assert found == {_sha(copy): _sha(texts[7])}


def test_texts_without_words_are_only_exact_duplicates() -> None:
    f = NearDuplicateFilter(DedupeSettings())
    assert f.signature("--- ***") is None
    assert f.find_duplicates(_pairs(["----", "====", "{}"])) == {}
    assert f.find_duplicates(_pairs(["----"]), existing=_pairs(["----"])) == {_sha("----"): _sha("----")}


def test_short_texts_compare_as_token_sets() -> None:
    f = NearDuplicateFilter(DedupeSettings(shingle_words=5))
    assert f.find_duplicates(_pairs(["return x", "x, return"])) == {_sha("x, return"): _sha("return x")}
    assert f.find_duplicates(_pairs(["return x", "return y"])) == {}


def test_threshold_one_needs_equal_signatures() -> None:
    """Equal signatures, not provably equal sets: one changed word in 600 (J ≈ 0.98) often passes."""
    rng = random.Random(7)
    a = _chunk(rng)
    f = NearDuplicateFilter(DedupeSettings(threshold=1.0))
    assert f.find_duplicates(_pairs([a, _edit(a, 0.03, rng), a.title()])) == {_sha(a.title()): _sha(a)}


def test_disabled_drops_nothing() -> None:
    f = NearDuplicateFilter(DedupeSettings(enabled=False))
    assert f.find_duplicates(_pairs(["same text", "Same text!"]), existing=_pairs(["same text"])) == {}


def test_deterministic_across_instances() -> None:
    rng = random.Random(8)
    base = [_chunk(rng, 300) for _ in range(40)]
    new = _pairs([_edit(t, rng.choice([0.0, 0.01, 0.03]), rng) for t in base] + base[:5])
    settings = DedupeSettings(threshold=0.75)
    first = NearDuplicateFilter(settings).find_duplicates(new)
    assert first == NearDuplicateFilter(settings).find_duplicates(new)
    assert first  # the case is not vacuous
    assert NearDuplicateFilter(settings).signature(base[0]) == NearDuplicateFilter(settings).signature(
        base[0]
    )


def test_one_permutation_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"dedupe\.num_perm must be at least 2"):
        NearDuplicateFilter(DedupeSettings(num_perm=1))
