"""The composition root: every stage built from one Settings, each constructor cheap
(docs/contributing.md#cheap-constructors)."""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_rag.context import Context, ContextBuilder, build_prompt, cached_embed, cited_ids, fragment_cuts
from hybrid_rag.context.edges import check_edges, interleaved, with_edges
from hybrid_rag.context.selfcheck import Checked, SelfCheck, cosine_range
from hybrid_rag.errors import InputError, RemoteServiceError, describe
from hybrid_rag.indices.build import IndexBuilder
from hybrid_rag.indices.live import IndexConfig, LiveIndexProvider
from hybrid_rag.indices.served_symbols import resolve_path, served_state, shown_matches, shown_outline
from hybrid_rag.ingest.fill import FillSettings
from hybrid_rag.ingest.freshness import Freshness, mark_stale
from hybrid_rag.ingest.pipeline import Ingestor, IngestSettings
from hybrid_rag.ingest.protected import keys_file_path
from hybrid_rag.lang.query import query_language
from hybrid_rag.lifecycle import IndexLifecycle
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.generation import make_generator
from hybrid_rag.models.second import SecondEmbedders
from hybrid_rag.paths import shown_result
from hybrid_rag.protocols import Embedder, ModelChooser
from hybrid_rag.querylog import QueryLog, make_record
from hybrid_rag.request import Query
from hybrid_rag.retrieval.expansion import QueryExpander
from hybrid_rag.retrieval.grouping import by_file, check_group
from hybrid_rag.retrieval.opening import set_opener
from hybrid_rag.retrieval.rerank import make_reranker
from hybrid_rag.retrieval.retriever import HybridRetriever, resolve_flags
from hybrid_rag.second_job import SecondSetJob, answering_model, context_builder_for
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.writer_lock import WriterLock
from hybrid_rag.symbols.edges import edge_lines
from hybrid_rag.symbols.model import SymbolMatch
from hybrid_rag.symbols.references import _shower
from hybrid_rag.symbols.search import OutlineEntry
from hybrid_rag.symbols.search import find as find_symbols
from hybrid_rag.symbols.search import outline as symbol_outline
from hybrid_rag.types import QueryResult


@dataclass(frozen=True)
class Answer:
    """What ``ask`` gives: the context, the prompt sent, and the answer (None without a generator,
    or when it failed: then ``error`` says why)."""

    question: str
    context: Context
    checked: Checked | None
    system: str
    prompt: str
    text: str | None
    error: str | None = None

    @property
    def cited(self) -> tuple[int, ...]:
        """The context ids the answer cites, in order of first citation."""
        return tuple(cited_ids(self.text)) if self.text else ()

    def to_dict(self) -> dict[str, Any]:
        sources = {s.citation: s.ref for s in self.context.sources}
        return {
            "question": self.question,
            "answer": self.text,
            "error": self.error,
            "cited": [{"id": n, "source": sources.get(n)} for n in self.cited],
            "context": self.context.to_dict(),
            "prompt": self.prompt,
            **({"self_check": self.checked.to_dict()} if self.checked is not None else {}),
        }


class Engine(IndexLifecycle):
    """Store, embedder, indices, retriever and ingestor for one data directory."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = MetadataStore(settings.store_path, url=settings.store.url, indices=settings.indices_dir)
        # every write below holds it: one writer at a time on the data dir, across processes
        self.writer = WriterLock(settings.data_dir, wait_seconds=settings.store.writer_wait_seconds)
        self.embedder = embedder if embedder is not None else make_embedder(settings.embedding)
        if isinstance(self.embedder, ModelChooser):  # embedding.model: auto (models/auto.py)
            self.embedder.bind_data_dir(
                settings.indices_dir, lambda: self.store.language_counts() if self.store.exists else {}
            )
        index_config = self.index_config = IndexConfig.of(settings)
        self.indices = LiveIndexProvider(index_config, self.embedder)
        self.generator = make_generator(settings.generator)
        expander = QueryExpander(
            settings.expansion,
            self.embedder,
            self.generator,
            retrieval=settings.retrieval,
            bm25=settings.bm25,
            encoding=settings.chunking.encoding,
        )
        self.retriever = HybridRetriever(
            self.store,
            self.embedder,
            self.indices,
            expander,
            retrieval=settings.retrieval,
            features=settings.features,
            rerank=settings.rerank,
            mmr=settings.mmr,
            reranker=make_reranker(
                settings.rerank,
                self.embedder,
                bm25=settings.bm25,
                device=settings.embedding.device,
                runtime=settings.embedding.runtime,
                threads=settings.embedding.threads,
            ),
        )
        builder = IndexBuilder(
            self.store,
            self.embedder,
            index_config,
            chunking=settings.chunking,
            keep_versions=settings.paths.keep_versions,
        )
        builder.embed_never = frozenset(settings.ingest.embed_never)  # ingest/embed_order.py
        # the second vector set's model, made on first use (indices/second_dense.py)
        self.second_embedders = builder.second_embedder = SecondEmbedders(settings.embedding)
        self.retriever.second_embedders = self.second_embedders
        self.second_set = SecondSetJob(builder, self.writer, lambda: self.second_embedders.model)
        self.ingestor = Ingestor(
            self.store,
            self.embedder,
            builder,
            IngestSettings(
                settings.loading,
                settings.archive,
                settings.chunking,
                settings.dedupe,
                batch_chunks=settings.ingest.batch_chunks,
                data_dir=settings.data_dir,
                convert=settings.convert,
                bm25_first=settings.ingest.publish_bm25_first,
                bm25_first_min_bytes=settings.ingest.bm25_first_min_bytes,
                bm25_first_min_seconds=settings.ingest.bm25_first_min_seconds,
                fill=FillSettings(
                    settings.ingest.batch_chunks,
                    settings.ingest.publish_every_seconds,
                    settings.ingest.embed_order,
                    settings.ingest.embed_never,
                ),
                tokenize_ahead=settings.ingest.tokenize_ahead,
                protected_folders=(settings.indices_dir, settings.logs_dir),
                protected_files=(settings.store_path, keys_file_path(settings)),
            ),
        )
        self.context_builder = ContextBuilder(
            settings.context,
            cached_embed(self.embedder, self.store),
            self.generator,
            encoding=settings.chunking.encoding,
            cosines=lambda: cosine_range(self.embedder.model_name),
        )
        self.querylog = QueryLog.in_dir(settings.logs_dir)
        self.freshness = Freshness()  # stale citations: files changed on disk since indexed

    @classmethod
    def open(
        cls, data_dir: str | os.PathLike[str] | None = None, *, config: str | os.PathLike[str] | None = None
    ) -> Engine:
        """An engine over ``data_dir`` with the CLI's defaults: ``config`` or ``HYBRID_RAG_CONFIG``,
        then ``HYBRID_RAG_*`` overrides; ``data_dir`` or ``HYBRID_RAG_HOME`` or ``./data``."""
        return cls(load_settings(config, data_dir=data_dir))

    def query(self, text: str | Query, *, log: bool = False, **kwargs: Any) -> QueryResult:
        """``HybridRetriever.query``; ``log=True`` (as the CLI does) appends a line to logs/queries.jsonl.
        ``text`` a :class:`~hybrid_rag.request.Query`, or text with the Query's options as keywords.

        The self-check runs here only when the call asks for it (``features={"self_check": True}``,
        ``query --self-check``), not from ``features.self_check``: a retry costs whole retrievals,
        and a raw query has no context to protect. The result is then the kept attempt's.
        ``group``/``units_per_file``: as for :meth:`retrieve` (files ranked by their evidence)."""
        grouping = {k: kwargs.pop(k) for k in ("group", "units_per_file") if k in kwargs}
        query = Query.of(text, **kwargs)
        self_check = bool((query.features or {}).get("self_check"))
        return self.retrieve(query, self_check=self_check, log=log, **grouping)[0]

    def self_check(self, text: str | Query, *, log: bool = False, **kwargs: Any) -> Checked:
        """Retrieve with the self-check's retries (``context.confidence_threshold``, ``max_retries``),
        every attempt judged against ``text`` by the live dense index; ``kwargs`` as for ``query``."""
        checked = self.retrieve(Query.of(text, **kwargs), self_check=True, log=log)[1]
        assert checked is not None
        return checked

    def retrieve(
        self, text: str | Query, *, self_check: bool, log: bool = False, **kwargs: Any
    ) -> tuple[QueryResult, Checked | None]:
        """The one place that decides whether a retrieval runs through the self-check: the result
        (the kept attempt's, when it did) and the self-check's record (None when it did not).
        Paths are shown relative to the ingested root (``hybrid_rag/paths.py``) unless
        ``absolute_paths=True``. ``text``: a Query, or text with its options as keywords.
        ``group="file"`` ranks files instead of chunks (``result.files``, each with its best
        ``units_per_file`` units; ``retrieval/grouping.py``); ``top_k`` then counts files."""
        group, units = check_group(kwargs.pop("group", None)), kwargs.pop("units_per_file", None)
        query = Query.of(text, **kwargs)
        if group == "file":  # files by evidence: retrieval/grouping.py

            def run_ungrouped(top_k: int) -> tuple[QueryResult, Checked | None]:
                wider = dataclasses.replace(query, top_k=top_k)
                return self.retrieve(wider, self_check=self_check, log=log)

            return by_file(run_ungrouped, {"top_k": query.top_k}, self.settings.retrieval.top_k, units)
        text, options = query.text, query.pipeline_args
        root = None if query.absolute_paths else self.ingested_root()
        behind, asked = self.behind_note(), query.asked  # its language, decided once

        def run(q: str) -> QueryResult:
            found = mark_stale(self.retriever.query(q, **options, lang=asked), self.store, self.freshness)
            result = with_language(shown_result(found, root), query)
            result = self.second_set.after(result)  # the second vector set: second_job.py
            return with_note(result, behind) if behind else result

        if not self_check:
            result = run(text)
            if log:
                self.querylog.append(make_record(text, result))
            return result, None
        relevance = self.retriever.dense_scores
        cosines = cosine_range(answering_model(self.retriever, text, asked))  # the second set's: its scale
        check = SelfCheck(
            self.settings.context, run, self.generator, relevance=relevance, cosines=cosines, lang=asked.code
        )
        checked = check.run(text)
        if log:
            self.querylog.append(make_record(text, checked.result, checked=checked))
        return checked.result, checked

    def context(
        self,
        text: str | Query,
        *,
        max_tokens: int | None = None,
        log: bool = False,
        edges: str | None = None,
        **kwargs: Any,
    ) -> tuple[Context, Checked | None]:
        """Retrieve (with the self-check's retries when ``features.self_check``), then build the
        token-budgeted, cited context, whose confidence is the self-check's verdict when it ran.
        ``kwargs`` go to ``query`` (top_k, filters, mode, features). ``context.result`` is the kept
        result with the context's stages in its trace; ``log=True`` logs that. ``edges``: ``off`` or
        ``signatures`` (default ``context.edges``): a question about one definition gets its
        callers' and callees' signatures within the budget (``context/edges.py``)."""
        mode = check_edges(edges or self.settings.context.edges)
        query = Query.of(text, **kwargs)
        text = query.text
        flags = resolve_flags(self.settings.features, query.features)
        lang = query.asked.code  # the context reads the question in its language too
        result, checked = self.retrieve(query, self_check=flags.self_check)
        fragments = fragment_cuts(self.store, result.chunks)
        builder = context_builder_for(self.context_builder, result, self.second_embedders, self.store)
        context = builder.build(
            text, result, max_tokens=max_tokens, checked=checked, fragments=fragments, lang=lang
        )
        if mode == "signatures" and self.store.exists:
            name, called_by, calls = edge_lines(
                self.store, text, served_state(self.index_config), _shower(self.ingested_root())
            )
            context = with_edges(
                context,
                name,
                interleaved(called_by, calls),
                self.context_builder.count,
                lambda b: builder.build(
                    text, result, max_tokens=b, checked=checked, fragments=fragments, lang=lang
                ),
            )
        if log:
            self.querylog.append(make_record(text, context.result, checked=checked, context=context))
        return context, checked

    def ask(
        self,
        text: str | Query,
        *,
        max_tokens: int | None = None,
        answer_tokens: int = 512,
        log: bool = False,
        edges: str | None = None,
        **kwargs: Any,
    ) -> Answer:
        """The cited context for ``text`` and, with a generator configured, its answer; ``edges`` as
        for :meth:`context`."""
        query = Query.of(text, **kwargs)
        context, checked = self.context(query, max_tokens=max_tokens, edges=edges)
        lang = query.asked.code  # the prompt asks for an answer in its language
        return self.answer(query.text, context, checked, answer_tokens=answer_tokens, log=log, lang=lang)

    def answer(
        self,
        text: str,
        context: Context,
        checked: Checked | None = None,
        *,
        answer_tokens: int = 512,
        log: bool = False,
        lang: str | None = None,
    ) -> Answer:
        """Send a built context to the generator (when there is one), asking for an answer in
        ``lang`` (the question's; None: detected). A generator that fails leaves the Answer's
        ``error`` set and its context intact: never an exception here."""
        lang = lang or query_language(text).code
        system, prompt = build_prompt(text, context, self.settings.context, lang=lang)
        answer, error, timings = None, None, {}
        if self.generator is not None:
            start = time.perf_counter()
            try:
                answer = self.generator.generate(prompt, system=system, max_tokens=answer_tokens)
            except RemoteServiceError as exc:
                error = str(exc)
            except Exception as exc:  # a pluggable Generator: whatever it raises is its failure
                error = f"the generator failed: {describe(exc)}"
            timings["generate"] = (time.perf_counter() - start) * 1000
        if log:
            record = make_record(text, context.result, checked=checked, context=context, timings_ms=timings)
            if error is not None:
                record["notes"].append(f"answer generator failed: {error}")
            self.querylog.append(record)
        return Answer(text, context, checked, system, prompt, answer, error)

    def symbols(
        self,
        name: str,
        *,
        mode: str | None = None,
        kinds: Sequence[str] | None = None,
        path: str | None = None,
        limit: int = 20,
        absolute_paths: bool = False,
    ) -> list[SymbolMatch]:
        """Definitions named ``name`` in the served index version: exact, then prefix matches, fuzzy
        ones when there are neither (``mode`` picks one kind), of ``kinds``, under a ``path`` glob
        (``src/**``, shown or stored); each cites ``path:start-end`` (``hybrid_rag/symbols``)."""
        self._require_store()
        root = self.ingested_root()
        glob = path.removeprefix("./") if path else None
        state = served_state(self.index_config)
        found = find_symbols(
            self.store, name, mode=mode, kinds=kinds, path_glob=glob, state=state, limit=limit
        )
        return shown_matches(found, None if absolute_paths else root)

    def outline(self, path: str, *, absolute_paths: bool = False) -> list[OutlineEntry]:
        """A file's definitions in order, nested (``depth``), in the served index version; ``path``
        as shown (relative to the ingested root), stored, or relative to the working directory.
        InputError when no stored document has that path."""
        self._require_store()
        root = self.ingested_root()
        stored = resolve_path(path, self.store.document_hashes(), root)
        if stored is None:
            shown = "paths as `hybrid-rag documents` shows them"
            raise InputError(f"no document {path!r} in the store ({shown})")
        symbols = self.store.symbols(path=stored, state=served_state(self.index_config))
        return shown_outline(symbol_outline(symbols), None if absolute_paths else root)

    def references(
        self, question: str, name: str, *, depth: int = 1, absolute_paths: bool = False
    ) -> dict[str, Any]:
        """``question`` about ``name`` in the served index version, answered as JSON with every
        definition cited ``path:start-end`` (``hybrid_rag/symbols/questions.py``): ``refs`` (every
        use, by file), ``callers``, ``callees`` (``depth`` levels) or ``impact`` (``name`` a file
        as shown or stored, or a definition's name: the definitions and files depending on it)."""
        from hybrid_rag.symbols import questions as graph

        self._require_store()
        root = self.ingested_root()
        state = served_state(self.index_config)
        shown = None if absolute_paths else root
        if question == "refs":
            answer = graph.refs_answer(self.store, name, state=state, root=shown)
        elif question == "callers":
            answer = graph.callers_answer(self.store, name, state=state, depth=depth, root=shown)
        elif question == "callees":
            answer = graph.callees_answer(self.store, name, state=state, depth=depth, root=shown)
        elif question == "impact":
            path = resolve_path(name, self.store.document_hashes(), root)
            answer = graph.impact_answer(self.store, name, state=state, path=path, depth=depth, root=shown)
        else:
            raise InputError(f"unknown question {question!r}: refs, callers, callees or impact")
        return answer

    def close(self) -> None:
        self.second_set.stop()  # a second vector set being built stops after its batch (cached)
        self.store.close()

    def __enter__(self) -> Engine:
        """``with Engine(settings) as engine:`` closes the engine (its store) when the block ends."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_language(result: QueryResult, question: Query) -> QueryResult:
    """``result`` with the language the question was read in (``--lang``, else detected, once)."""
    return dataclasses.replace(result, lang=question.language.code)


def with_note(result: QueryResult, note: str) -> QueryResult:
    """``result`` with one more note in its trace."""
    return dataclasses.replace(
        result, trace=dataclasses.replace(result.trace, notes=(*result.trace.notes, note))
    )


def open_retriever(
    data_dir: str | os.PathLike[str] | None = None, *, config: str | os.PathLike[str] | None = None
) -> HybridRetriever:
    """``HybridRetriever.open``: the engine's retriever, showing paths relative to the ingested root
    and marking stale citations; closing it closes the store, all the Engine holds open."""
    engine = Engine.open(data_dir, config=config)
    retriever = engine.retriever
    retriever.present = functools.partial(_present, engine)
    return retriever


def _present(engine: Engine, result: QueryResult, absolute_paths: bool) -> QueryResult:
    """An opened retriever's result: stale citations marked, paths shown as every surface shows them."""
    result = mark_stale(result, engine.store, engine.freshness)
    if absolute_paths:
        return result
    return shown_result(result, engine.ingested_root())


set_opener(open_retriever)
