"""Documents as text: does a judged collection retrieve as well from PDF and DOCX as from text?

cranfield (1,400 abstracts, 225 judged queries) is written by this study, reproducibly, as one
PDF a document (reportlab, one page each; a long abstract runs onto a second page) and one DOCX a
document (python-docx: the title as a heading, then the abstract), and each folder is ingested
through the real ingest path (walk, convert, chunk, embed) into a store of its own. The same
collection ingested as text (``ingest_dataset``, as every other study) is the baseline. For each:
nDCG@10 and R@50 per document (a chunk's path stem is the document id) and a paired t-test
against text. Then conversion alone, one format at a time in a fresh process: pages (documents)
per second and peak RSS, for pypdfium2 (the PDF converter used) and pypdf (the alternative, with
how much of pypdfium2's text it gives), DOCX, PPTX, XLSX, HTML; and the ingest of one 300-page
PDF (the first 300 abstracts, a page each) with the real model.

    HF_HUB_OFFLINE=1 flock /tmp/hybrid-rag-bench.lock \
        .venv/bin/python benchmarks/harness.py run document_formats
    .venv/bin/python benchmarks/harness.py run document_formats --out /tmp/d.json --fake --max-queries 10
    .venv/bin/python benchmarks/harness.py report document_formats
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, compare, evaluate, load_beir
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
_SHARED = ROOT.parent / "shared" / "datasets"  # a worktree under /work/wt/<name>: two levels up
DATASETS = Path(
    os.environ.get("HYBRID_RAG_DATASETS")
    or (_SHARED if _SHARED.is_dir() else ROOT.parent.parent / "shared" / "datasets")
)
WORK = ROOT / "benchmarks" / "work" / "document_formats"
FORMAT = "hybrid-rag-document-formats/1"
METRICS = ("ndcg@10", "recall@50")
TOP_K = 100
DIGITS = 6
BIG_PDF_PAGES = 300
SPEED_FORMATS = ("pdf", "pdf-pypdf", "docx", "pptx", "xlsx", "html")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def doc_text(dataset: BeirDataset, doc_id: str) -> tuple[str, str]:
    title, text = dataset.corpus[doc_id]
    return title.strip(), text.strip()


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def pdf_bytes(pages: list[tuple[str, str]]) -> bytes:
    """One page a (title, text): the title as a heading, the text as a paragraph."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story: list[Any] = []
    for i, (title, text) in enumerate(pages):
        if i:
            story.append(PageBreak())
        if title:
            story.append(Paragraph(_xml(title), styles["Heading2"]))
        story.append(Paragraph(_xml(text), styles["Normal"]))
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4, invariant=1).build(story)
    return buf.getvalue()


def docx_bytes(title: str, text: str) -> bytes:
    import docx

    document = docx.Document()
    if title:
        document.add_heading(title, 1)
    document.add_paragraph(text)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def pptx_bytes(title: str, text: str) -> bytes:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title or "untitled"
    slide.placeholders[1].text = text
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def xlsx_bytes(title: str, text: str) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["title", "abstract"])
    sheet.append([title, text])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def html_bytes(title: str, text: str) -> bytes:
    page = f"<html><head><title>{_xml(title)}</title><script>var x = 1;</script></head><body>"
    page += f"<nav>home | search</nav><main><h1>{_xml(title)}</h1><p>{_xml(text)}</p></main></body></html>"
    return page.encode()


WRITERS = {"docx": docx_bytes, "pptx": pptx_bytes, "xlsx": xlsx_bytes, "html": html_bytes}


def write_collection(dataset: BeirDataset, folder: Path, fmt: str) -> int:
    """Every document as ``<id>.<fmt>`` in ``folder`` (kept when complete); returns the count."""
    done = folder / ".complete"
    if done.exists():
        return len(dataset.corpus)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for doc_id in sorted(dataset.corpus):
        title, text = doc_text(dataset, doc_id)
        data = pdf_bytes([(title, text)]) if fmt == "pdf" else WRITERS[fmt](title, text)
        (folder / f"{doc_id}.{fmt}").write_bytes(data)
    done.write_text("ok\n")
    return len(dataset.corpus)


def stem_run(engine: Engine, dataset: BeirDataset) -> dict[str, dict[str, float]]:
    """Every judged query: documents (a chunk's file stem, or path for text) at their best rank."""
    runs: dict[str, dict[str, float]] = {}
    for qid in dataset.qrels:
        result = engine.query(dataset.queries[qid], top_k=TOP_K)
        run: dict[str, float] = {}
        n = len(result.chunks)
        for rank, chunk in enumerate(result.chunks):
            run.setdefault(Path(chunk.path).stem, float(n - rank))
        runs[qid] = run
    return runs


_SPEED = r"""
import json, sys, time
from pathlib import Path
fmt, folder = sys.argv[1], Path(sys.argv[2])
files = sorted(p for p in folder.iterdir() if p.suffix == "." + fmt.split("-")[0])
if fmt == "pdf-pypdf":
    import io, pypdf
    def read(raw):
        return [page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(raw)).pages]
else:
    from hybrid_rag.ingest.converters import Unconvertible, convert
    from hybrid_rag.settings import ConvertSettings
    settings = ConvertSettings()
    def read(raw, name="x." + fmt):
        try:
            got = convert(name, raw, settings)
        except Unconvertible:  # an empty document: no page of text
            return []
        units = {(loc.kind, loc.name, loc.number) for loc in got.locators}
        return [got.text] * max(1, len(units))
raws = [p.read_bytes() for p in files]
start = time.perf_counter()
pages = 0
texts = []
for raw in raws:
    got = read(raw)
    pages += len(got)
    texts.append(" ".join(got[:1] if fmt != "pdf-pypdf" else got))  # pdfium: the whole text once
seconds = time.perf_counter() - start
words = [set(t.split()) for t in texts]
hwm = [l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:")]
print(json.dumps({"files": len(raws), "pages": pages, "seconds": seconds,
                  "peak_rss_mb": int(hwm[0].split()[1]) / 1024 if hwm else float("nan"),
                  "words": [sorted(w) for w in words[:200]]}))
"""


def conversion_speed(work: Path, fmt: str) -> dict[str, Any]:
    folder = work / "files" / fmt.split("-")[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _SPEED, fmt, str(folder)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout)


def ingest_folder(settings: Any, embedder: Any, folder: Path, data_dir: Path) -> tuple[Engine, float, Any]:
    engine = Engine(settings.with_overrides({"paths.data_dir": str(data_dir)}), embedder=embedder)
    start = time.perf_counter()
    report = engine.ingest([folder], collection="cranfield")
    return engine, time.perf_counter() - start, report


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(max(1, args.torch_threads))
    base = load_settings(args.config)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    work = Path(args.work)
    dataset = load_beir(Path(args.datasets) / "cranfield")
    if args.max_queries:
        kept = list(dataset.qrels)[: args.max_queries]
        dataset = BeirDataset(
            dataset.name,
            dataset.corpus,
            {q: dataset.queries[q] for q in kept},
            {q: dataset.qrels[q] for q in kept},
        )
    embedder = make_embedder(base.embedding)
    files = {}
    for fmt in ("pdf", "docx", "pptx", "xlsx", "html"):
        log(f"write cranfield as {fmt}")
        t = time.perf_counter()
        files[fmt] = {"documents": write_collection(dataset, work / "files" / fmt, fmt), "seconds": 0.0}
        files[fmt]["seconds"] = round(time.perf_counter() - t, 3)

    runs: dict[str, dict[str, Any]] = {}
    reports = {}
    stores = work / ("stores-fake" if args.fake else "stores")
    if stores.exists():
        shutil.rmtree(stores)
    for variant in ("text", "pdf", "docx"):
        log(f"ingest cranfield as {variant}")
        data_dir = stores / variant
        if variant == "text":
            engine = Engine(base.with_overrides({"paths.data_dir": str(data_dir)}), embedder=embedder)
            seconds = ingest_dataset(engine, dataset)
            info = {"documents": len(dataset.corpus), "skipped": 0}
        else:
            engine, seconds, report = ingest_folder(base, embedder, work / "files" / variant, data_dir)
            info = {"documents": len(report.plan.added), "skipped": len(report.plan.skipped)}
        try:
            log(f"query cranfield as {variant}")
            run = stem_run(engine, dataset)
            info["chunks"] = engine.store.chunk_count()
        finally:
            engine.close()
        reports[variant] = evaluate(run, dataset.qrels, METRICS)
        runs[variant] = {**info, "ingest_seconds": round(seconds, 3)}
    for variant, report in reports.items():
        tests = compare(reports["text"], report) if variant != "text" else {}
        runs[variant]["metrics"] = {m: round(report.means[m], DIGITS) for m in METRICS}
        runs[variant]["vs_text"] = {
            m: {"delta": round(c.delta, DIGITS), "p": round(c.p_value, DIGITS)} for m, c in tests.items()
        }

    log("conversion speed, one format a process")
    speed = {}
    for fmt in SPEED_FORMATS:
        speed[fmt] = conversion_speed(work, fmt)
    pdfium_words, pypdf_words = speed["pdf"].pop("words"), speed["pdf-pypdf"].pop("words")
    overlap = [
        len(set(a) & set(b)) / max(len(set(a) | set(b)), 1)
        for a, b in zip(pdfium_words, pypdf_words, strict=True)
    ]
    for fmt in speed:
        speed[fmt].pop("words", None)
        speed[fmt]["pages_per_second"] = round(speed[fmt]["pages"] / max(speed[fmt]["seconds"], 1e-9), 1)
        speed[fmt]["seconds"] = round(speed[fmt]["seconds"], 3)
        speed[fmt]["peak_rss_mb"] = round(speed[fmt]["peak_rss_mb"], 1)

    log(f"one {BIG_PDF_PAGES}-page PDF")
    big = work / "big"
    if big.exists():
        shutil.rmtree(big)
    big.mkdir(parents=True)
    ids = sorted(dataset.corpus)[:BIG_PDF_PAGES]
    (big / "manual.pdf").write_bytes(pdf_bytes([doc_text(dataset, d) for d in ids]))
    engine, seconds, report = ingest_folder(base, embedder, big, stores / "big")
    try:
        chunks = engine.store.chunk_count()
        stored = engine.store.chunks(engine.store.all_chunk_ids().tolist()).values()
        spans = [(c.meta["page"], c.meta.get("page_end", c.meta["page"])) for c in stored if "page" in c.meta]
    finally:
        engine.close()
    big_pdf = {
        "pages": BIG_PDF_PAGES,
        "bytes": (big / "manual.pdf").stat().st_size,
        "ingest_seconds": round(seconds, 3),
        "stage_seconds": {k: round(v, 3) for k, v in report.seconds.items()},
        "chunks": chunks,
        "pages_covered": len({p for first, last in spans for p in range(first, last + 1)}),
        "chunks_over_two_pages_or_more": sum(first != last for first, last in spans),
    }
    return {
        "format": FORMAT,
        "dataset": "cranfield",
        "queries": len(dataset.qrels),
        "model": base.embedding.model,
        "files": files,
        "retrieval": runs,
        "pypdf_word_jaccard_vs_pdfium": round(sum(overlap) / max(len(overlap), 1), 4),
        "conversion": speed,
        "big_pdf": big_pdf,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder holding cranfield/ (%(default)s)")
    p.add_argument("--config", help="base settings YAML (default: the built-in defaults)")
    p.add_argument(
        "--fake", action="store_true", help="the hash embedder instead of the model (plumbing only)"
    )
    p.add_argument("--max-queries", type=int, default=None, help="this many judged queries")
    p.add_argument("--work", default=str(WORK), help="generated files and stores (%(default)s)")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (default 1, as the suite)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    return measure(args)


def render(result: Mapping[str, Any]) -> str:
    r = result["retrieval"]
    lines = [
        f"cranfield ({result['queries']} judged queries, {result['files']['pdf']['documents']} documents), "
        f"model `{result['model']}`, each format ingested through the real ingest path into its own store.",
        "",
        "| collection as | documents | chunks | ingest s | nDCG@10 | Δ vs text (p) | R@50 | Δ vs text (p) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in r.items():
        m, vs = row["metrics"], row["vs_text"]

        def delta(metric: str, vs: Mapping[str, Any] = vs) -> str:
            return f"{vs[metric]['delta']:+.4f} ({vs[metric]['p']:.3f})" if metric in vs else "-"

        lines.append(
            f"| {name} | {row['documents']} | {row['chunks']} | {row['ingest_seconds']:.0f} | "
            f"{m['ndcg@10']:.4f} | {delta('ndcg@10')} | {m['recall@50']:.4f} | {delta('recall@50')} |"
        )
    lines += [
        "",
        "Conversion alone (one process a format, files read into memory first; a PDF page, a DOCX "
        "or HTML document, a slide, a sheet's rows count as one page):",
        "",
        "| format | library | files | pages | pages/s | peak RSS MB (VmHWM) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    libraries = {
        "pdf": "pypdfium2 (used)",
        "pdf-pypdf": "pypdf (not used)",
        "docx": "python-docx",
        "pptx": "python-pptx",
        "xlsx": "openpyxl",
        "html": "html.parser (stdlib)",
    }
    for fmt, row in result["conversion"].items():
        lines.append(
            f"| {fmt.split('-')[0]} | {libraries.get(fmt, fmt)} | {row['files']} | {row['pages']} | "
            f"{row['pages_per_second']:.0f} | {row['peak_rss_mb']:.0f} |"
        )
    b = result["big_pdf"]
    lines += [
        "",
        f"pypdf's words against pypdfium2's on the first 200 PDFs: mean Jaccard "
        f"{result['pypdf_word_jaccard_vs_pdfium']:.3f}.",
        "",
        f"One {b['pages']}-page PDF ({b['bytes'] / 1e6:.1f} MB): ingested in {b['ingest_seconds']:.1f} s "
        f"({b['chunks']} chunks covering {b['pages_covered']} pages, {b['chunks_over_two_pages_or_more']} of "
        f"them over more than one page; stages: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in b["stage_seconds"].items())
        + ").",
    ]
    return "\n".join(lines) + "\n"
