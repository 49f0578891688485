"""BM25 keyword search over chunk texts, with bm25s (default) or rank_bm25 behind one class.

Conventions:

* documents are chunk ids (int64 SQLite row ids); results are best first, **ties broken by
  ascending chunk id**;
* a document is a result only if it contains at least one query term and scores above zero
  (BM25L/BM25+ give every document a floor for each query term; that floor alone is no match);
* ``allowed_ids`` masks the scores before the top k are chosen, so k results come back
  whenever k allowed documents match;
* ``k <= 0``, an empty index, a query with no known term, or an empty ``allowed_ids`` give ``[]``;
* ``bm25_min_df``: terms found in fewer documents are dropped before indexing (from the
  vocabulary and from document lengths); a query term so dropped matches nothing;
* the BM25L and BM25+ delta is Lv & Zhai's recommendation (0.5 and 1.0), the same for both backends.

With ``backend: bm25s`` the index is segmented (``indices/segmented.py``): :meth:`update` adds a
delta segment and tombstones removed chunks instead of rebuilding, and scores stay bit for bit those
of a from-scratch bm25s build. Versions written before segments (format 1, bm25s's own score
matrix) still load and search; the next update of such a version is a full build.

Backend variants: bm25s implements all five. rank_bm25 implements ``robertson`` (as
``BM25Okapi`` with ``epsilon=0``, which is exactly Robertson's idf clamped at zero, as bm25s
computes it; rank_bm25's default epsilon=0.25 floors negative idfs at a quarter of the mean
idf instead), ``bm25+`` (``BM25Plus``, identical scores to bm25s) and ``bm25l`` (``BM25L``,
which multiplies by the term frequency once more than the paper and bm25s, so it ranks
differently). For ``robertson`` bm25s leaves out the constant factor (k1 + 1): its scores are
rank_bm25's divided by k1 + 1, and the rankings are the same.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import ConfigError, CorruptIndexError, IndexMismatchError
from hybrid_rag.indices.dense import rank_hits
from hybrid_rag.indices.files import file_sha256, write_json_atomic
from hybrid_rag.indices.segmented import SegmentedBM25, load_segmented, plan_merge, save_segmented
from hybrid_rag.lang.tokenize import TOKENIZER_VERSION, Tokenizer
from hybrid_rag.settings import BM25Settings
from hybrid_rag.types import Hit

FORMAT_VERSION = 2  # 2: segments (bm25s backend); 1: bm25s's score matrix, still read
READABLE_FORMATS = (1, 2)
MERGE_KEYS = ("max_deltas", "merge_fraction")  # settings that change no score: not checked at load
SUBDIR = "bm25"
MANIFEST_FILE = "bm25.json"
IDS_FILE = "ids.npy"
TOKENS_FILE = "tokens.jsonl"  # rank_bm25 only: the indexed terms, one JSON list a line
DELTA = {"bm25l": 0.5, "bm25+": 1.0}  # Lv & Zhai (CIKM 2011); unused by the other variants
RANK_BM25_VARIANTS = ("robertson", "bm25l", "bm25+")


def top_k_hits(ids: np.ndarray, scores: np.ndarray, keep: np.ndarray, k: int) -> list[Hit]:
    """The best ``k`` documents where ``keep`` is true: argpartition, then exact sort with ties by id."""
    candidates = np.flatnonzero(keep)
    if len(candidates) > k:
        cand_scores = scores[candidates]
        kth = len(candidates) - k
        threshold = cand_scores[np.argpartition(cand_scores, kth)[kth]]
        candidates = candidates[cand_scores >= threshold]  # every tie at the k-th score stays in
    return rank_hits(ids[candidates], scores[candidates], k)


def filter_min_df(docs: list[list[str]], min_df: int) -> list[list[str]]:
    """Drop terms found in fewer than ``min_df`` documents."""
    if min_df <= 1:
        return docs
    df = Counter(term for doc in docs for term in set(doc))
    keep = {term for term, count in df.items() if count >= min_df}
    return [[term for term in doc if term in keep] for doc in docs]


def postings_sorted(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether every column of a CSC matrix lists its row indices in ascending order."""
    if len(indices) < 2:
        return True
    rising = np.diff(indices.astype(np.int64)) > 0
    starts = indptr[1:-1]
    rising[starts[(starts > 0) & (starts < len(indices))] - 1] = True  # a new column may start lower
    return bool(rising.all())


class _BM25sBackend:
    """bm25s: the score of every (document, term) pair precomputed in a sparse matrix."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.vocab: dict[str, int] = model.vocab_dict
        self._postings_sorted: bool | None = None  # checked on the first scores_at

    @classmethod
    def build(cls, docs: list[list[str]], settings: BM25Settings) -> _BM25sBackend:
        import bm25s

        vocab = {term: i for i, term in enumerate(sorted(set().union(*docs)))}
        token_ids = [list(map(vocab.__getitem__, doc)) for doc in docs]
        model = bm25s.BM25(
            k1=settings.k1, b=settings.b, delta=DELTA.get(settings.variant, 0.5), method=settings.variant
        )
        model.index((token_ids, vocab), create_empty_token=False, show_progress=False)
        return cls(model)

    def scores(self, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Scores of every document and whether each contains a query term."""
        term_ids = np.array([self.vocab[t] for t in terms], dtype=np.int64)
        scores = self.model.get_scores_from_ids(term_ids)
        indptr, indices = self.model.scores["indptr"], self.model.scores["indices"]
        matched = np.zeros(len(scores), dtype=bool)
        for t in np.unique(term_ids):
            matched[indices[indptr[t] : indptr[t + 1]]] = True
        return scores, matched

    def scores_at(self, terms: list[str], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` at document ``rows`` only, the same values bit for bit: each term's
        posting list is binary-searched for the rows, and the sums run in bm25s's dtype and term
        order. Costs O(terms · rows · log postings), not O(postings). bm25s writes each posting
        list in document order; should a version not, this falls back to :meth:`scores`."""
        sc = self.model.scores
        data, indices, indptr = sc["data"], sc["indices"], sc["indptr"]
        rows = np.asarray(rows, dtype=np.int64)
        if self._postings_sorted is None:
            self._postings_sorted = postings_sorted(indices, indptr)
        if not self._postings_sorted:
            scores, matched = self.scores(terms)
            return scores[rows], matched[rows]
        term_ids = np.array([self.vocab[t] for t in terms], dtype=np.int64)
        out = np.zeros(len(rows), dtype=data.dtype)
        matched = np.zeros(len(rows), dtype=bool)
        for t in term_ids:
            start, end = int(indptr[t]), int(indptr[t + 1])
            if start == end:
                continue
            postings = indices[start:end]
            pos = np.searchsorted(postings, rows).clip(max=end - start - 1)
            hit = postings[pos] == rows
            out[hit] += data[start + pos[hit]]
            matched |= hit
        if self.model.nonoccurrence_array is not None:
            out += self.model.nonoccurrence_array[term_ids.astype(indices.dtype)].sum()
        return out, matched

    @property
    def num_docs(self) -> int:
        return int(self.model.scores["num_docs"])

    def save(self, directory: Path) -> None:
        self.model.save(directory, allow_pickle=False, show_progress=False)

    @classmethod
    def load(cls, directory: Path, settings: BM25Settings) -> _BM25sBackend:
        import bm25s

        return cls(bm25s.BM25.load(directory, allow_pickle=False, mmap=False, show_progress=False))


class _RankBM25Backend:
    """rank_bm25: term frequencies per document, scored at query time; rebuilt from terms at load."""

    def __init__(self, model: Any, docs: list[list[str]]) -> None:
        self.model = model
        self.docs = docs
        self.vocab: dict[str, float] = model.idf

    @classmethod
    def build(cls, docs: list[list[str]], settings: BM25Settings) -> _RankBM25Backend:
        import rank_bm25

        common = {"k1": settings.k1, "b": settings.b}
        if settings.variant == "robertson":
            model = rank_bm25.BM25Okapi(docs, epsilon=0.0, **common)
        elif settings.variant == "bm25l":
            model = rank_bm25.BM25L(docs, delta=DELTA["bm25l"], **common)
        else:
            model = rank_bm25.BM25Plus(docs, delta=DELTA["bm25+"], **common)
        return cls(model, docs)

    @property
    def num_docs(self) -> int:
        return int(self.model.corpus_size)

    def scores(self, terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
        wanted = set(terms)
        matched = np.fromiter(
            (not wanted.isdisjoint(freqs) for freqs in self.model.doc_freqs),
            dtype=bool,
            count=len(self.model.doc_freqs),
        )
        return np.asarray(self.model.get_scores(terms)), matched

    def scores_at(self, terms: list[str], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` at document ``rows`` only (rank_bm25's ``get_batch_scores``)."""
        rows = np.asarray(rows, dtype=np.int64)
        wanted = set(terms)
        matched = np.array([not wanted.isdisjoint(self.model.doc_freqs[r]) for r in rows], dtype=bool)
        return np.asarray(self.model.get_batch_scores(terms, rows.tolist()), dtype=np.float64), matched

    def save(self, directory: Path) -> None:
        with (directory / TOKENS_FILE).open("w", encoding="utf-8") as handle:
            for doc in self.docs:
                handle.write(json.dumps(doc, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, directory: Path, settings: BM25Settings) -> _RankBM25Backend:
        lines = (directory / TOKENS_FILE).read_text(encoding="utf-8").splitlines()
        return cls.build([json.loads(line) for line in lines], settings)


class BM25IndexManager:
    """BM25 over chunk texts: with bm25s, segments updated in place (:meth:`update`); with
    rank_bm25, any change of the corpus is a new :meth:`build`."""

    def __init__(self, settings: BM25Settings) -> None:
        if settings.backend == "rank_bm25" and settings.variant not in RANK_BM25_VARIANTS:
            raise ConfigError(
                f"bm25.variant {settings.variant!r} is not implemented by rank_bm25; "
                f"valid there: {', '.join(RANK_BM25_VARIANTS)} (or use bm25.backend: bm25s)"
            )
        self._settings = settings
        self._tokenizer = Tokenizer.for_settings(settings)
        self._ids = np.empty(0, dtype=np.int64)
        self._sorter: np.ndarray | None = None  # argsort of _ids, made by the first score()
        self._backend: _BM25sBackend | _RankBM25Backend | None = None  # None: no term indexed
        self._seg: SegmentedBM25 | None = None  # backend bm25s, format 2
        self._source: tuple[Path, dict[str, str]] = (Path(), {})  # folder loaded from, file digests

    @property
    def settings(self) -> BM25Settings:
        return self._settings

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer that queries must go through to meet the indexed terms."""
        return self._tokenizer

    def __len__(self) -> int:
        return self._seg.n_docs if self._seg is not None else len(self._ids)

    def ids(self) -> np.ndarray:
        return self._seg.ids() if self._seg is not None else self._ids.copy()

    @property
    def segmented(self) -> SegmentedBM25 | None:
        return self._seg

    @property
    def supports_update(self) -> bool:
        """Whether :meth:`update` applies: segments, and no ``bm25_min_df`` (a global cut)."""
        return self._seg is not None and self._settings.bm25_min_df <= 1

    def _new_segmented(self) -> SegmentedBM25:
        s = self._settings
        return SegmentedBM25(s.variant, s.k1, s.b, DELTA.get(s.variant, 0.5))

    def build(
        self,
        ids: np.ndarray,
        texts: Sequence[str],
        *,
        tokens: Sequence[Sequence[str]] | None = None,
        langs: Sequence[str] | None = None,
    ) -> None:
        """Index ``texts`` under chunk ``ids``, replacing whatever was indexed before.

        ``tokens``, when given, are the texts already tokenised by ``self.tokenizer`` (a cache:
        BM25 statistics are global, so every build is whole, but tokenising need not be redone).
        ``langs``: each text's language (the chunks' ``lang``); detected when None and tokenised
        here. Counted per language, they decide how a query of no indexed language is read.
        """
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) != len(texts) or (tokens is not None and len(tokens) != len(texts)):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        if len(np.unique(ids)) != len(ids):
            raise ValueError("duplicate chunk ids given to BM25 build")
        langs = self._languages_of(texts, tokens, langs)
        terms = (
            [list(t) for t in tokens] if tokens is not None else self._tokenizer.tokenize_many(texts, langs)
        )
        docs = filter_min_df(terms, self._settings.bm25_min_df)
        self._ids, self._sorter, self._source = ids, None, (Path(), {})
        self._tokenizer.index_languages = dict(Counter(langs or ()))
        if self._settings.backend == "bm25s":
            self._backend, self._seg = None, self._new_segmented()
            self._seg.add(ids, docs)
            return
        self._backend = self._backend_cls().build(docs, self._settings) if any(docs) else None

    def update(
        self,
        remove: np.ndarray,
        ids: np.ndarray,
        texts: Sequence[str],
        *,
        tokens: Sequence[Sequence[str]] | None = None,
        langs: Sequence[str] | None = None,
    ) -> str | None:
        """Tombstone ``remove`` and add ``texts`` under ``ids`` as a new delta segment, then merge
        as the policy says (``bm25.max_deltas``, ``bm25.merge_fraction``); returns "base",
        "deltas" or None for the merge done. Only where :attr:`supports_update`."""
        if not self.supports_update or self._seg is None:
            raise ValueError("this BM25 index cannot be updated in place: build it")
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) != len(texts) or (tokens is not None and len(tokens) != len(texts)):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self._seg.delete(np.asarray(remove, dtype=np.int64))
        langs = self._languages_of(texts, tokens, langs)
        terms = (
            [list(t) for t in tokens] if tokens is not None else self._tokenizer.tokenize_many(texts, langs)
        )
        counts = Counter(self._tokenizer.index_languages)  # removals are not subtracted: an upper bound
        counts.update(langs or ())
        self._tokenizer.index_languages = dict(counts)
        self._seg.add(ids, terms)
        where = plan_merge(self._seg, self._settings.max_deltas, self._settings.merge_fraction)
        if where is not None:
            self._seg.merge(where)
        return None if where is None else ("base" if where == 0 else "deltas")

    def _languages_of(
        self, texts: Sequence[str], tokens: Sequence[Sequence[str]] | None, langs: Sequence[str] | None
    ) -> list[str] | None:
        """The texts' languages: given, or detected when this index analyses languages and must
        tokenise the texts itself; None when neither (terms given without their languages)."""
        if langs is not None:
            if len(langs) != len(texts):
                raise ValueError(f"{len(langs)} languages for {len(texts)} texts")
            return list(langs)
        if tokens is None and self._tokenizer.languages:
            from hybrid_rag.lang.detect import detect_language

            return [detect_language(text).code for text in texts]
        return None

    def merge(self) -> None:
        """Fold every segment into one base, purging tombstones (what ``rebuild`` ends with)."""
        if self._seg is not None:
            self._seg.merge(0)

    def _backend_cls(self) -> type[_BM25sBackend] | type[_RankBM25Backend]:
        return _BM25sBackend if self._settings.backend == "bm25s" else _RankBM25Backend

    def search(
        self,
        query: str,
        k: int,
        allowed_ids: np.ndarray | None = None,
        *,
        lang: str | None = None,
        terms: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Top-k chunk ids for ``query`` read in ``lang`` (None: detected) by BM25 (see the module
        docstring for the conventions); ``terms``: the query's terms already read by this index's
        tokenizer (``Tokenizer.asked_terms``), else read here."""
        backend = self._seg or self._backend
        if k <= 0 or backend is None or not query.strip():
            return []
        terms = self._known(self._query_terms(query, lang, terms))
        if not terms:
            return []
        rows = self._seg.all_ids if self._seg is not None else self._ids
        keep = self._seg.all_live.copy() if self._seg is not None else np.ones(len(rows), dtype=bool)
        if allowed_ids is not None:
            allowed = np.asarray(allowed_ids, dtype=np.int64).reshape(-1)
            if len(allowed) == 0:
                return []
            keep &= np.isin(rows, allowed)
        scores, matched = backend.scores(terms)
        return top_k_hits(rows, scores, keep & matched & (scores > 0), k)

    def known_terms(self, terms: Sequence[str]) -> list[str]:
        """Those of ``terms`` the index holds, in order (what a query with them can match)."""
        return self._known(terms)

    def held_terms(
        self, query: str, lang: str | None = None, terms: Sequence[str] | None = None
    ) -> tuple[int, int]:
        """(how many of ``query``'s distinct terms, read in ``lang``, this index holds, how many it
        has): whether BM25 can read a question at all (a Russian one over English text holds none).
        ``terms``: as in :meth:`search`."""
        distinct = list(dict.fromkeys(self._query_terms(query, lang, terms)))
        return len(self.known_terms(distinct)), len(distinct)

    def _query_terms(self, query: str, lang: str | None, terms: Sequence[str] | None) -> list[str]:
        return list(terms) if terms is not None else self._tokenizer.tokenize_query(query, lang)

    def _known(self, terms: Sequence[str]) -> list[str]:
        if self._seg is not None:
            return self._seg.known(terms)
        return [t for t in terms if self._backend is not None and t in self._backend.vocab]

    def score(
        self, query: str, ids: np.ndarray, *, lang: str | None = None, terms: Sequence[str] | None = None
    ) -> np.ndarray:
        """The BM25 score of each of ``ids`` for ``query`` (read in ``lang``, or its ``terms``, as
        ``search``), in the order given (float64).

        A chunk without any query term scores 0, as in ``search`` (the BM25L/BM25+ floor is no
        match); an id this index does not hold is NaN.
        """
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        out = np.full(len(ids), np.nan)
        if self._seg is not None:
            held = self._known(self._query_terms(query, lang, terms)) if len(ids) else []
            scores, matched, present = self._seg.scores_at(held, ids)
            out[present] = np.where(matched, scores, 0.0)[present]
            return out
        if len(ids) == 0 or len(self._ids) == 0:
            return out
        if self._sorter is None:
            self._sorter = np.argsort(self._ids, kind="stable")
        order = self._sorter
        pos = np.searchsorted(self._ids, ids, sorter=order).clip(max=len(self._ids) - 1)
        rows = order[pos]
        present = self._ids[rows] == ids
        out[present] = 0.0
        backend = self._backend
        query_terms = [] if backend is None else self._query_terms(query, lang, terms)
        held = [t for t in query_terms if backend is not None and t in backend.vocab]
        if backend is not None and held and present.any():
            scores, matched = backend.scores_at(held, rows[present])
            out[present] = np.where(matched, scores, 0.0)
        return out

    def save(self, directory: Path) -> None:
        """Write ``directory/bm25/``: arrays + JSON (never pickle) and the manifest ``bm25.json``.

        Files go to a temporary folder first, which then takes the place of ``bm25/``.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=directory, prefix=f".{SUBDIR}.", suffix=".tmp"))
        try:
            extra: dict[str, Any] = {}
            if self._seg is not None:
                extra["segments"] = save_segmented(self._seg, tmp, *self._source)
            else:
                np.save(tmp / IDS_FILE, self._ids, allow_pickle=False)
            if self._backend is not None:
                self._backend.save(tmp)
            known = self._source[1]
            files = {p.name: known.get(p.name) or file_sha256(p) for p in sorted(tmp.iterdir())}
            write_json_atomic(tmp / MANIFEST_FILE, {**self._manifest(files), **extra})
            _swap_in(tmp, directory / SUBDIR)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _manifest(self, files: dict[str, str]) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION if self._seg is not None or self._backend is None else 1,
            "backend": self._settings.backend,
            "params": self._settings.model_dump(mode="json", exclude=set(MERGE_KEYS)),
            "tokenizer": self._tokenizer.params(),
            "languages": dict(sorted(self._tokenizer.index_languages.items())),
            "delta": DELTA.get(self._settings.variant),
            "count": len(self),
            "vocab_size": self._vocab_size(),
            "files": files,
        }

    def _vocab_size(self) -> int:
        if self._seg is not None:
            return len(set().union(*(s.terms for s in self._seg.segments))) if self._seg.segments else 0
        return 0 if self._backend is None else len(self._backend.vocab)

    @classmethod
    def load(cls, directory: Path, settings: BM25Settings) -> BM25IndexManager:
        """Read ``directory/bm25/``, refusing an index built with other BM25 or tokenizer settings."""
        folder = Path(directory) / SUBDIR
        manifest = _read_manifest(folder / MANIFEST_FILE)
        _check_params(folder, manifest, settings)
        for name, digest in manifest["files"].items():
            path = folder / name
            if not path.is_file():
                raise CorruptIndexError(f"BM25 index file missing: {path}")
            if file_sha256(path) != digest:
                raise CorruptIndexError(f"BM25 index file fails its checksum: {path}")
        manager = cls(settings)
        languages = manifest.get("languages") or {}
        manager._tokenizer.index_languages = {str(k): int(v) for k, v in languages.items()}
        try:
            if "segments" in manifest:
                manager._seg = manager._new_segmented()
                load_segmented(manager._seg, folder, manifest["segments"])
                manager._source = (folder, dict(manifest["files"]))
            else:
                manager._ids = np.load(folder / IDS_FILE, allow_pickle=False).astype(np.int64)
            if manifest["vocab_size"] and "segments" not in manifest:
                manager._backend = manager._backend_cls().load(folder, settings)
        except Exception as exc:  # any reader failing on a file that passed its checksum
            raise CorruptIndexError(f"BM25 index at {folder} is unreadable: {exc}") from None
        count = manifest["count"]
        n_docs = count if manager._backend is None else manager._backend.num_docs
        if manager._seg is not None and len(manager) != count:
            raise CorruptIndexError(f"BM25 index at {folder} does not match its manifest {MANIFEST_FILE}")
        if manager._seg is not None:
            return manager
        if len(manager._ids) != count or n_docs != count:
            raise CorruptIndexError(f"BM25 index at {folder} does not match its manifest {MANIFEST_FILE}")
        return manager


def _swap_in(new: Path, final: Path) -> None:
    """Replace the folder ``final`` by ``new`` (two renames; ``final`` is briefly absent)."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(new, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CorruptIndexError(f"BM25 index manifest missing: {path}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptIndexError(f"BM25 index manifest unreadable: {path} ({exc})") from None
    required = ("format_version", "backend", "params", "tokenizer", "count", "vocab_size", "files")
    if not isinstance(manifest, dict) or any(key not in manifest for key in required):
        raise CorruptIndexError(f"BM25 index manifest incomplete: {path}")
    if manifest["format_version"] not in READABLE_FORMATS:
        raise IndexMismatchError(
            f"BM25 index at {path.parent} has format v{manifest['format_version']}, "
            f"this version reads v{', v'.join(map(str, READABLE_FORMATS))}: run `hybrid-rag rebuild`"
        )
    return manifest


def _check_params(folder: Path, manifest: dict[str, Any], settings: BM25Settings) -> None:
    tokenizer = manifest["tokenizer"]
    built = dict(
        manifest["params"],
        tokenizer_version=tokenizer.get("tokenizer_version"),
        language_table=tokenizer.get("languages"),
    )
    built = {k: v for k, v in built.items() if k not in MERGE_KEYS}
    wanted = dict(
        settings.model_dump(mode="json", exclude=set(MERGE_KEYS)),
        tokenizer_version=TOKENIZER_VERSION,
        language_table=Tokenizer.for_settings(settings).params().get("languages"),  # a changed table
    )
    differ = sorted(key for key in built.keys() | wanted.keys() if built.get(key) != wanted.get(key))
    if differ:
        was = ", ".join(f"bm25.{key}={built.get(key)!r}" for key in differ)
        now = ", ".join(f"bm25.{key}={wanted.get(key)!r}" for key in differ)
        raise IndexMismatchError(
            f"BM25 index at {folder} was built with {was}; the config says {now}: run `hybrid-rag rebuild`"
        )
