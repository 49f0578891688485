"""The store's caches by text hash: embeddings, MinHash signatures, tokens."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from hybrid_rag.store.rows import _batches, _checked_windows
from hybrid_rag.store.schema import _Embedding, _Signature, _Tokens
from hybrid_rag.store.sessions import StoreSessions


class CacheRows(StoreSessions):
    """The caches keyed by a text's hash: embeddings (MaxP windows), MinHash signatures, tokens."""

    def cached_windows(
        self, model: str, sha256s: Iterable[str], *, corrupt: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Cached window vectors by chunk sha256, each of shape (n_windows, dimension). A row that
        fails its checksum (or, without one, has rows that are not unit length) is left out, as if
        not cached, and its sha256 appended to ``corrupt``."""
        out: dict[str, np.ndarray] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Embedding).where(_Embedding.model == model, _Embedding.sha256.in_(batch))
                for row in s.scalars(query):
                    windows = _checked_windows(row)
                    if windows is None:
                        if corrupt is not None:
                            corrupt.append(row.sha256)
                        continue
                    out[row.sha256] = windows
        return out

    def drop_embeddings(self, model: str, sha256s: Iterable[str]) -> None:
        """Forget cached vectors (corrupt ones, before they are embedded again)."""
        with self._session() as s, s.begin():
            for batch in _batches(sorted(set(sha256s))):
                s.execute(delete(_Embedding).where(_Embedding.model == model, _Embedding.sha256.in_(batch)))

    def cached_shas(self, model: str, sha256s: Iterable[str]) -> set[str]:
        """Which of the chunk sha256s have cached vectors for ``model`` (the vectors are not read)."""
        out: set[str] = set()
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Embedding.sha256).where(
                    _Embedding.model == model, _Embedding.sha256.in_(batch)
                )
                out.update(s.scalars(query))
        return out

    def put_embeddings(self, model: str, embeddings: Mapping[str, np.ndarray]) -> None:
        """Cache vectors by chunk sha256: a (dimension,) vector or a (n_windows, dimension) matrix."""
        with self._session() as s, s.begin():
            self._put_embeddings(s, model, embeddings)

    @staticmethod
    def _put_embeddings(s: Session, model: str, embeddings: Mapping[str, np.ndarray]) -> None:
        known = set()
        for batch in _batches(list(embeddings)):
            query = select(_Embedding.sha256).where(_Embedding.model == model, _Embedding.sha256.in_(batch))
            known.update(s.scalars(query))
        rows = []
        for sha, vec in embeddings.items():
            if sha in known:
                continue
            blob = np.ascontiguousarray(np.atleast_2d(vec), dtype=np.float32).tobytes()
            rows.append(
                _Embedding(
                    model=model,
                    sha256=sha,
                    dimension=int(np.shape(vec)[-1]),
                    vector=blob,
                    checksum=zlib.crc32(blob),
                )
            )
        s.add_all(rows)

    def cached_signatures(self, num_perm: int, sha256s: Iterable[str]) -> dict[str, np.ndarray | None]:
        """MinHash hash values by chunk sha256 (None for a text without words)."""
        out: dict[str, np.ndarray | None] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Signature).where(
                    _Signature.num_perm == num_perm, _Signature.sha256.in_(batch)
                )
                for row in s.scalars(query):
                    values = row.hashvalues
                    out[row.sha256] = (
                        None if values is None else np.frombuffer(values, dtype=np.uint64).copy()
                    )
        return out

    def put_signatures(self, num_perm: int, signatures: Mapping[str, np.ndarray | None]) -> None:
        with self._session() as s, s.begin():
            known = set()
            for batch in _batches(list(signatures)):
                known.update(s.scalars(select(_Signature.sha256).where(_Signature.sha256.in_(batch))))
            s.add_all(
                _Signature(
                    sha256=sha,
                    num_perm=num_perm,
                    hashvalues=None if values is None else np.asarray(values, dtype=np.uint64).tobytes(),
                )
                for sha, values in signatures.items()
                if sha not in known
            )

    def cached_tokens(self, tokenizer: str, sha256s: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._session() as s:
            for batch in _batches(sorted(set(sha256s))):
                query = select(_Tokens.sha256, _Tokens.terms).where(  # columns, no ORM instances
                    _Tokens.tokenizer == tokenizer, _Tokens.sha256.in_(batch)
                )
                out.update((sha, terms.split()) for sha, terms in s.execute(query))
        return out

    def put_tokens(self, tokenizer: str, tokens: Mapping[str, Sequence[str]]) -> None:
        with self._session() as s, s.begin():
            known = set()
            for batch in _batches(list(tokens)):
                query = select(_Tokens.sha256).where(
                    _Tokens.tokenizer == tokenizer, _Tokens.sha256.in_(batch)
                )
                known.update(s.scalars(query))
            s.add_all(
                _Tokens(sha256=sha, tokenizer=tokenizer, terms=" ".join(terms))
                for sha, terms in tokens.items()
                if sha not in known
            )
