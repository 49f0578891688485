"""HybridRetriever: the query pipeline, one timed line per stage
(docs/contributing.md#pipeline-reads-like-its-stages).

filter → retrieve (dense + BM25) → expand → symbols → fetch → exact scores → fuse → rerank → thresholds →
MMR → parents.
Every optional stage has a flag under ``features:`` and a per-call override; each is timed into
the trace, and a stage that is skipped or degrades says so in the trace's notes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from hybrid_rag import deadline
from hybrid_rag import filters as filter_lang
from hybrid_rag.errors import ConfigError, InputError, RemoteServiceError, StoreError
from hybrid_rag.filters.cost import check_cost
from hybrid_rag.indices import hubness, question_bank
from hybrid_rag.indices.chunk_terms import chunk_terms
from hybrid_rag.indices.coverage import dense_note, pending_line
from hybrid_rag.indices.live import LiveIndex, LiveIndexProvider
from hybrid_rag.indices.retention import STORE_STATE
from hybrid_rag.lang.query import Asked
from hybrid_rag.lang.tokenize import Tokenizer
from hybrid_rag.paths import ingested_root
from hybrid_rag.protocols import Embedder, Reranker, with_filter
from hybrid_rag.request import Query
from hybrid_rag.retrieval.candidates import Candidates, RetrievalMode, resolve_flags
from hybrid_rag.retrieval.code_rank import apply_code_rules, holds_code
from hybrid_rag.retrieval.definition_first import definitions_first
from hybrid_rag.retrieval.expansion import QueryExpander
from hybrid_rag.retrieval.fusion import Fused, FusionMode, Scorer, complete_runs, fuse_runs, run_weights
from hybrid_rag.retrieval.grouping import units_together
from hybrid_rag.retrieval.implementations import IMPLEMENTATION, pull_implementations
from hybrid_rag.retrieval.matching import matching_lines
from hybrid_rag.retrieval.mmr import apply_mmr
from hybrid_rag.retrieval.opening import Openable
from hybrid_rag.retrieval.parent import attach_parent_context
from hybrid_rag.retrieval.priors import apply_priors
from hybrid_rag.retrieval.question_terms import content_terms, identifier_tokens, question_words, with_terms
from hybrid_rag.retrieval.reading import Reading
from hybrid_rag.retrieval.reading_stage import ReadingStage
from hybrid_rag.retrieval.rerank import rerank_candidates
from hybrid_rag.retrieval.routing import code_route_filter
from hybrid_rag.retrieval.symbol_ranking import SYMBOLS, hits_of, named_symbols
from hybrid_rag.retrieval.symbol_ranking import boost as boost_symbols
from hybrid_rag.retrieval.thresholds import apply_min_scores
from hybrid_rag.settings import FeatureFlags, MMRSettings, RerankSettings, RetrievalSettings
from hybrid_rag.store import MetadataStore
from hybrid_rag.symbols.centrality import CENTRALITY, apply_centrality, file_ranks, is_architecture
from hybrid_rag.types import (
    Chunk,
    Hit,
    ParentContext,
    QueryResult,
    ScoredChunk,
    SourceType,
    Tracer,
)

T = TypeVar("T")
READ = Reading()  # every stage reads the question
TERM_MEMO_LIMIT = 4_000  # chunks whose PRF terms are kept in memory (cleared past it): ~100 a query


class HybridRetriever(ReadingStage, Openable):
    """Dense + BM25 candidates, fused, reranked and diversified, with a per-stage trace.

    >>> with HybridRetriever.open("data") as retriever:  # doctest: +SKIP
    ...     retriever.query("how are ties broken?", top_k=3)

    Opened, it shows paths as every other surface does (``hybrid_rag/paths.py``): relative to the
    ingested root, or as stored with ``query(..., absolute_paths=True)``, and marks stale citations.
    The Engine's own retriever answers stored paths (the Engine shows them).
    """

    def __init__(
        self,
        store: MetadataStore,
        embedder: Embedder,
        indices: LiveIndexProvider,
        expander: QueryExpander,
        *,
        retrieval: RetrievalSettings,
        features: FeatureFlags,
        rerank: RerankSettings,
        mmr: MMRSettings,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.indices = indices
        self.expander = expander
        self.retrieval = retrieval
        self.features = features
        self.rerank_settings = rerank
        self.mmr = mmr
        self.reranker = reranker
        self.second_embedders: Callable[[str], Embedder] | None = None  # models/second.py; the engine's
        self._languages: tuple[int, dict[str, int]] | None = None  # (index version, language counts)
        self._root: tuple[int, str | None] | None = None  # (index version, ingested root)
        self._terms: tuple[tuple[int, str], dict[int, list[str]]] | None = None  # see _term_memo

    def query(
        self,
        text: str | Query,
        top_k: int | None = None,
        filters: object = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        fusion: str | None = None,
        *,
        absolute_paths: bool = False,
        lang: str | Asked | None = None,
    ) -> QueryResult:
        """Ranked chunks for ``text``.

        ``filters``: a filter string (``"source_type=code and path~src/**"``), a list of them (ANDed)
        or a mapping (``{"collection": ["a", "b"]}``); ``features`` overrides the config's flags;
        ``fusion`` overrides ``retrieval.fusion`` for this call (``fusion.FusionMode``).
        Opened (``open``), paths are shown relative to the ingested root unless ``absolute_paths``.
        ``lang``: the question's language (a code, or an ``Asked`` decided for it; None: detected).
        ``text`` may be a :class:`~hybrid_rag.request.Query`: its options and language are used.
        """
        if isinstance(text, Query):  # the typed request: its own options, read in its language
            result = self.ranked(text.text, **text.pipeline_args, asked=text.asked)
            return result if self.present is None else self.present(result, text.absolute_paths)
        asked = lang if isinstance(lang, Asked) else Asked.of(text, lang) if lang else None
        result = self.ranked(text, top_k, filters, mode, features, fusion, asked)
        return result if self.present is None else self.present(result, absolute_paths)

    def ranked(
        self,
        text: str,
        top_k: int | None = None,
        filters: object = None,
        mode: str | None = None,
        features: Mapping[str, bool] | None = None,
        fusion: str | None = None,
        asked: Asked | None = None,
    ) -> QueryResult:
        """The pipeline's ranked chunks for ``text``, paths as stored (``query``'s arguments);
        ``asked``: the question's language, decided once (``lang/query.py``; None: detected here).
        ``text`` may be a text made from that question (a self-check retry): ``Asked.code_of``."""
        if not text or not text.strip():
            raise InputError("empty query: ask something")
        asked = asked if asked is not None else Asked.of(text)
        rule = FusionMode.from_str(fusion or self.retrieval.fusion)  # unknown: a ConfigError naming them
        flags = resolve_flags(self.features, features)
        run_mode = RetrievalMode.from_str(mode or self.retrieval.mode)
        top_k = self.retrieval.top_k if top_k is None else top_k
        tracer, live = Tracer(), self.indices.get()
        if live.dense_status:  # a BM25-first ingest's partial version (indices/coverage.py)
            tracer.dense = live.dense_status
        if note := dense_note(live.manifest):  # also what ``ingest.embed_never`` keeps BM25-only
            tracer.note(note)
            tracer.not_dense = pending_line(live.manifest)
        if top_k <= 0:
            return QueryResult(text, run_mode.value, (), tracer.freeze(), live.version)
        allowed = timed(tracer, "filter", self.allowed_ids, text, filters, flags, tracer)
        if allowed is not None and allowed.size == 0:
            tracer.note("filter matched no chunks")
            return QueryResult(text, run_mode.value, (), tracer.freeze(), live.version)
        reading = self.reading(text, run_mode, flags, live, tracer, asked)
        live = hubness.corrected(live, flags.hubness, tracer)  # CSLS in every dense score
        live = question_bank.corrected(
            live, flags.question_hubness, self.retrieval.question_hubness_form, tracer
        )
        live, embedder = self.vector_set(live, reading)  # the second set's, for a question only it reads
        candidates = self.retrieve(
            text, run_mode, flags, live, allowed, tracer, reading, asked, embedder=embedder
        )
        rows: dict[int, Chunk] = {}  # chunks read so far: the expansion reads the first pass's
        if flags.expansion or flags.multi_query:
            expand_args = (text, candidates, live, allowed, flags, rows, tracer, asked, embedder)
            candidates = timed(tracer, "expansion", self.expand, *expand_args)
        if flags.symbols or flags.definition_first:
            symbol_args = (text, candidates, live, allowed, flags, asked)
            candidates = timed(tracer, "symbols", self.add_symbols, *symbol_args)
        timed(tracer, "fetch", self.fetch, candidates, rows)
        self.check_rows(candidates, rows, live)
        runs = self.exact_scores(candidates, live, tracer, rule, asked)
        fused = timed(tracer, "fuse", self.fuse, candidates, runs, rows, reading, rule)
        scored = self.materialize(fused, runs, candidates, rows, tracer)
        if flags.priors and self.retrieval.path_priors:
            scored = timed(tracer, "priors", apply_priors, scored, self.retrieval.path_priors)
        r = self.retrieval
        if r.centrality_prior and (r.centrality_questions == "all" or is_architecture(text)):
            scored = timed(tracer, CENTRALITY, self.centrality, scored, live)
        code_timed = lambda stage, run, *args: timed(tracer, stage, run, *args)  # noqa: E731
        root = self.ingested_root(live.version)
        rule_args = (flags, self.retrieval, candidates.first, code_timed, root, question_words(asked))
        scored = apply_code_rules(text, scored, *rule_args)
        if flags.implementation and holds_code(scored, root):
            state = live.manifest.get(STORE_STATE)
            state = state if isinstance(state, int) else None
            scored = timed(tracer, IMPLEMENTATION, pull_implementations, scored, self.store, state, text)
        if flags.rerank:
            scored = timed(tracer, "rerank", self.rerank, text, scored, tracer, asked)
        if flags.thresholds:
            scored = self.thresholds(scored, tracer)
        if flags.mmr:
            scored = timed(tracer, "mmr", self.diversify, scored, candidates, live, reranked=flags.rerank)
        final = tuple(scored[:top_k])
        if self.retrieval.group_units_by_file:  # a file's units together, at its best one's place
            final = tuple(units_together(final))
        parents = timed(tracer, "parent_context", self.parents, final) if flags.parent_context else {}
        terms = content_terms(asked)
        matches = {c.id: matching_lines(c.text, text, c.start_line, terms=terms) for c in final}
        return QueryResult(
            text, run_mode.value, final, tracer.freeze(), live.version, parents, matches=matches
        )

    def _term_memo(self, version: int, tokenizer_key: str) -> dict[int, list[str]]:
        """Chunk id -> BM25 terms read for PRF under one index version and tokenizer: the pool of
        a small index's questions is the same few chunks, each read from the store's token cache
        once per version, not once per question (RESULTS.md#beside-the-frameworks)."""
        memo = self._terms
        if memo is None or memo[0] != (version, tokenizer_key) or len(memo[1]) > TERM_MEMO_LIMIT:
            memo = self._terms = ((version, tokenizer_key), {})
        return memo[1]

    def ingested_root(self, version: int) -> str | None:
        """The folder the stored paths are shown relative to (``hybrid_rag/paths.py``), read once
        per index version: the code rules read a path's words below it."""
        if self._root is None or self._root[0] != version:
            self._root = (version, ingested_root(*self.store.path_bounds()))
        return self._root[1]

    # -- stages ------------------------------------------------------------------------------

    def allowed_ids(
        self, text: str, filters: object, flags: FeatureFlags, tracer: Tracer
    ) -> np.ndarray | None:
        """Metadata filters (and code routing) as allowed chunk ids, applied before any search."""
        expr = filter_lang.as_filter(filters) if flags.filters else None
        check_cost(
            expr,
            max_terms=self.retrieval.filter_max_terms,
            max_globs=self.retrieval.filter_max_globs,
            max_glob_chars=self.retrieval.filter_max_glob_chars,
        )
        if filters is not None and not flags.filters:
            tracer.note("filters ignored: features.filters is off")
        allowed = None if expr is None else with_filter(self.store.chunk_ids_matching(expr), expr)
        if flags.routing:
            route = code_route_filter(text)
            if route is not None:
                both = route if expr is None else filter_lang.And((expr, route))
                routed = with_filter(self.store.chunk_ids_matching(both), both)
                if routed.size:
                    tracer.note("routed to source_type=code: the query looks like code")
                    return routed
                tracer.note("routing skipped: the query looks like code but no code chunks match")
        return allowed

    def retrieve(
        self,
        text: str,
        mode: RetrievalMode,
        flags: FeatureFlags,
        live: LiveIndex,
        allowed: np.ndarray | None,
        tracer: Tracer,
        reading: Reading = READ,
        asked: Asked | None = None,
        *,
        embedder: Embedder | None = None,
    ) -> Candidates:
        """Dense and BM25 candidates (a stage not searched when its ``reading`` scale is 0); BM25
        reads ``text`` in the language ``asked`` decided (None: detected); ``embedder``: the
        query's for ``live.dense`` (the second set's, ``vector_set``)."""
        r = self.retrieval
        embedder = embedder or self.embedder
        runs: dict[str, list[Hit]] = {}
        probes: dict[str, np.ndarray | str] = {}
        vector = None
        lexical = mode in (RetrievalMode.BM25, RetrievalMode.HYBRID)
        if mode in (RetrievalMode.DENSE, RetrievalMode.HYBRID) and flags.dense and reading.dense_scale > 0:
            try:
                with tracer.stage("embed_query"):
                    vector = embedder.embed_queries([text])[0]
            except RemoteServiceError as exc:  # an embedding server down: BM25 answers, and says so
                if not flags.bm25:
                    raise
                tracer.note(f"dense skipped: {exc}; BM25 only")
                lexical = True
            else:
                with tracer.stage("dense"):
                    runs["dense"] = live.dense.search(vector, r.dense_top_k, allowed)
                probes["dense"] = vector
        if lexical and flags.bm25 and (reading.bm25_scale > 0 or "dense" not in runs):
            with tracer.stage("bm25"):
                lang = None if asked is None else asked.code_of(text)
                terms = with_terms(live.bm25, asked, text)
                runs["bm25"] = live.bm25.search(text, r.bm25_top_k, allowed, lang=lang, **terms)
            probes["bm25"] = text
        if not runs:
            raise ConfigError(
                f"mode {mode.value!r} with features.dense and features.bm25 off retrieves nothing"
            )
        return Candidates(runs, vector, probes=probes)

    def expand(
        self,
        text: str,
        candidates: Candidates,
        live: LiveIndex,
        allowed: np.ndarray | None,
        flags: FeatureFlags,
        rows: dict[int, Chunk],
        tracer: Tracer,
        asked: Asked | None = None,
        embedder: Embedder | None = None,
    ) -> Candidates:
        """The expansion's lists added to ``candidates``; the chunks it reads are added to ``rows``
        (the fetch stage then reads only the others). ``asked``: the question's language;
        ``embedder``: ``live.dense``'s (``vector_set``)."""
        expander = self.expander.using(embedder)

        def terms(ids: Sequence[int], tokenizer: Tokenizer) -> dict[int, list[str]]:
            memo = self._term_memo(live.version, tokenizer.cache_key())
            todo = [i for i in ids if i not in memo]
            rows.update(self.store.chunks([i for i in todo if i not in rows]))
            found = [rows[i] for i in todo if i in rows]
            fresh = chunk_terms(self.store, tokenizer, found, cache_new=False)
            memo.update(zip([c.id for c in found], fresh, strict=True))
            return {i: memo[i] for i in ids if i in memo}

        expansion = expander.expand(
            text,
            candidates.runs,
            live,
            allowed,
            terms,
            query_vector=candidates.query_vector,
            method=flags.expansion,
            multi_query=flags.multi_query,
            asked=asked,
        )
        for note in expansion.notes:
            tracer.note(note)
        if expansion.queries:
            tracer.note("expanded with: " + " | ".join(q[:200] for q in expansion.queries))
        runs = dict(candidates.runs)
        if expansion.replace_dense:
            runs.pop("dense", None)
        runs.update(expansion.runs)
        probes = {**candidates.probes, **expansion.probes}
        replaced = expansion.replace_dense and "hyde" in expansion.runs
        kept = {name: probe for name, probe in probes.items() if name in runs}
        return Candidates(runs, candidates.query_vector, replaced, kept)

    def add_symbols(
        self,
        text: str,
        candidates: Candidates,
        live: LiveIndex,
        allowed: np.ndarray | None,
        flags: FeatureFlags | None = None,
        asked: Asked | None = None,
    ) -> Candidates:
        """The symbol list (``retrieval/symbol_ranking.py``): the chunks holding a definition the
        query names, as the served version's store state sees them, and with
        ``features.definition_first`` the ones to place first (``retrieval/definition_first.py``);
        ``candidates`` unchanged when it names none. ``asked``: the question, whose identifier tokens
        and words are read once (``question_terms.py``; None: read here)."""
        flags = flags or self.features
        state = live.manifest.get(STORE_STATE)
        state = state if isinstance(state, int) else None
        tokens = None if asked is None else identifier_tokens(asked)
        named = named_symbols(self.store, text, state=state, members=flags.member_symbols, tokens=tokens)
        if not named:
            return candidates
        if allowed is not None:
            keep = set(allowed.tolist())
            named = [n for n in named if n.symbol.chunk_id in keep]
        hits = hits_of(named) if flags.symbols else []
        root = self.ingested_root(live.version)
        words = None if asked is None else question_words(asked)
        first = tuple(definitions_first(named, text, root, words)) if flags.definition_first else ()
        runs = {**candidates.runs, SYMBOLS: hits} if hits else candidates.runs
        return replace(candidates, runs=runs, first=first)

    def centrality(self, scored: list[ScoredChunk], live: LiveIndex) -> list[ScoredChunk]:
        """The centrality prior (``symbols/centrality.py``) at the served version's store state."""
        state = live.manifest.get(STORE_STATE)
        ranks = file_ranks(self.store, state if isinstance(state, int) else None)
        return apply_centrality(scored, ranks, self.retrieval.centrality_weight)

    def scorers(
        self, candidates: Candidates, live: LiveIndex, asked: Asked | None = None
    ) -> dict[str, Scorer]:
        """For each run, a function scoring chunk ids as that run's own search would (a text read
        in the language ``asked`` gives it; None: detected)."""
        out: dict[str, Scorer] = {}
        for name, probe in candidates.probes.items():
            if isinstance(probe, str):
                lang = None if asked is None else asked.code_of(probe)
                read = {"lang": lang, **with_terms(live.bm25, asked, probe)}
                out[name] = lambda ids, probe=probe, read=read: live.bm25.score(probe, ids, **read)
            else:
                out[name] = lambda ids, probe=probe: live.dense.score(probe, ids)
        return out

    def fetch(self, candidates: Candidates, rows: dict[int, Chunk]) -> None:
        """Read the candidates' chunks into ``rows`` (those the expansion read are there already)."""
        rows.update(self.store.chunks([i for i in candidates.ids if i not in rows]))

    def check_rows(self, candidates: Candidates, rows: Mapping[int, Chunk], live: LiveIndex) -> None:
        """StoreError when the version still live holds chunks the store no longer has: its rows
        were collected under it (another host's garbage collection on a shared store, or damage),
        so it would answer with what is left. A version replaced meanwhile just drops them."""
        gone = [i for i in candidates.ids if i not in rows]
        versions = getattr(self.indices, "versions", None)
        if gone and versions is not None and versions.current() == live.version:
            raise StoreError(
                f"index version {live.version} is stale: the store no longer holds {len(gone)} of its "
                "chunks (collected by another data dir sharing the store?): run `hybrid-rag rebuild`"
            )

    def exact_scores(
        self,
        candidates: Candidates,
        live: LiveIndex,
        tracer: Tracer,
        rule: FusionMode | None = None,
        asked: Asked | None = None,
    ) -> Mapping[str, list[Hit]]:
        """Every candidate scored in every list (``retrieval.exact_scores``), timed as
        ``exact_scores``; RRF reads only ranks, and one list has nothing to complete."""
        r, runs = self.retrieval, candidates.runs
        rule = rule or FusionMode.from_str(r.fusion)
        if not r.exact_scores or rule is FusionMode.RRF or len(runs) < 2:
            return runs
        scorers = self.scorers(candidates, live, asked)
        return timed(tracer, "exact_scores", lambda: complete_runs(runs, scorers))

    def fuse(
        self,
        candidates: Candidates,
        runs: Mapping[str, list[Hit]],
        rows: Mapping[int, Chunk],
        reading: Reading = READ,
        rule: FusionMode | None = None,
    ) -> list[Fused]:
        """Fuse every list by ``retrieval.fusion``, each chunk with its source type's weights;
        expansion lists weigh by the index they searched, at their source type's expansion share.

        A source type's weights, expansion lists included, are scaled to one sum (1; for RRF 2, so
        that RRF with equal weights and no expansion is exactly ``sum 1 / (rrf_k + rank)``): a
        list that weighs one source type and not the other (``code_expansion_weight: 0``) moves
        the scores of its chunks within their type, never the types against each other."""
        r = self.retrieval
        rule = rule or FusionMode.from_str(r.fusion)  # retrieval.fusion, or the call's own
        symbols = runs.get(SYMBOLS, [])
        runs = {name: hits for name, hits in runs.items() if name != SYMBOLS}
        tables: dict[str, dict[str, float]] = {}
        per_share = 2.0 if rule is FusionMode.RRF else 1.0
        for source_type in ("text", "code"):
            dense, bm25 = r.fusion_weights(source_type)
            dense *= reading.dense_scale  # 1, or less for a query the dense model cannot read
            bm25 *= reading.bm25_scale  # 1, or 0 for a question in a language the index's text is not
            table = run_weights(
                runs,
                dense,
                bm25,
                expansion_weight=r.expansion_share(source_type),
                replace_dense=candidates.dense_replaced,
            )
            total = sum(table.values())  # 0 only for one list of weight 0, which fuses alone
            tables[source_type] = (
                {name: w * per_share / total for name, w in table.items()} if total else table
            )

        def weights(chunk_id: int) -> Mapping[str, float]:
            chunk = rows.get(chunk_id)
            return tables["code" if chunk is not None and chunk.source_type is SourceType.CODE else "text"]

        return boost_symbols(fuse_runs(runs, rule, weights, k=r.rrf_k), symbols, r.symbol_weight)

    def materialize(
        self,
        fused: list[Fused],
        runs: Mapping[str, list[Hit]],
        candidates: Candidates,
        rows: Mapping[int, Chunk],
        tracer: Tracer,
    ) -> list[ScoredChunk]:
        """Scored chunks with each list's score (exact scores included) and rank in its own
        list; an id whose row is gone (deleted meanwhile) is dropped with a note."""
        ranks = {name: candidates.rank_of(name) for name in candidates.runs}
        scores = {name: {h.id: h.score for h in hits} for name, hits in runs.items()}
        out: list[ScoredChunk] = []
        for f in fused:
            chunk = rows.get(f.id)
            if chunk is None:
                continue
            breakdown: dict[str, float] = {"fusion": f.score}
            for name, by_id in scores.items():
                if f.id in by_id:
                    breakdown[name] = by_id[f.id]
                if f.id in ranks.get(name, {}):
                    breakdown[f"{name}_rank"] = float(ranks[name][f.id][0])
            out.append(ScoredChunk(chunk, f.score, breakdown))
        if len(out) < len(fused):
            tracer.note(
                f"{len(fused) - len(out)} result(s) dropped: their chunks were deleted after indexing"
            )
        return out

    def rerank(
        self, text: str, scored: list[ScoredChunk], tracer: Tracer, asked: Asked | None = None
    ) -> list[ScoredChunk]:
        if self.reranker is None:
            tracer.note("rerank skipped: no reranker configured")
            return scored
        try:
            return rerank_candidates(self.reranker, text, scored, self.rerank_settings, asked)
        except RemoteServiceError as exc:  # a rerank server that fails leaves the fused order
            tracer.note(f"rerank skipped: {exc}")
            return scored

    def thresholds(self, scored: list[ScoredChunk], tracer: Tracer) -> list[ScoredChunk]:
        """Per-source-type floors, timed as ``thresholds`` when any is set; says what it dropped."""
        r = self.retrieval
        floors = (r.min_score_code, r.min_score_text)
        if floors == (None, None):
            return scored
        kept = timed(tracer, "thresholds", apply_min_scores, scored, *floors, on=r.threshold_on)
        if len(kept) < len(scored):
            tracer.note(
                f"thresholds dropped {len(scored) - len(kept)} of {len(scored)} result(s) whose "
                f"{r.threshold_on} score is below retrieval.min_score_code / min_score_text {floors}"
            )
        return kept

    def diversify(
        self, scored: list[ScoredChunk], candidates: Candidates, live: LiveIndex, *, reranked: bool
    ) -> list[ScoredChunk]:
        """MMR over the first ``mmr.pool`` candidates, and after a rerank only over the reranked
        head: the scores past it are on the fused scale, not the reranker's (see ``mmr.py``)."""
        if not scored:
            return scored
        m = self.mmr
        pool = m.pool
        if reranked and self.reranker is not None:
            # the head carries the reranker's score (rerank.py) and stays a prefix after the floors
            head = sum(1 for c in scored if self.reranker.name in c.breakdown)
            pool = min(pool, max(head, 1))
        vectors = pooled_vectors(live, np.array([c.id for c in scored[:pool]], dtype=np.int64))
        return apply_mmr(scored, vectors, candidates.query_vector, m.mmr_lambda, m.top_n, pool=pool)

    def parents(self, final: Sequence[ScoredChunk]) -> dict[int, ParentContext]:
        """Each result's neighbouring chunks, or its enclosing definition or section."""
        r = self.retrieval
        return attach_parent_context(final, self.store, r.parent_mode, r.parent_radius)


def pooled_vectors(live: LiveIndex, ids: np.ndarray) -> np.ndarray:
    """The chunks' vectors for MMR; on a partial version a chunk not embedded yet gets a zero row
    (cosine 0 to everything: it competes on its score alone, ``mmr.py``)."""
    try:
        return live.dense.vectors(ids)
    except KeyError:  # some are not embedded yet
        present = live.dense.contains(ids)
    out = np.zeros((len(ids), live.dense.dimension), dtype=np.float32)
    out[present] = live.dense.vectors(ids[present])
    return out


def timed(tracer: Tracer, stage: str, run: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``run(*args, **kwargs)`` timed into ``tracer`` as ``stage``: one line a stage in ``query``."""
    deadline.check()  # a request whose time ran out stops here, between two stages
    with tracer.stage(stage):
        return run(*args, **kwargs)
