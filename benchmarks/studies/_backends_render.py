"""Markdown for ``studies/backends.py``, from its JSON alone."""

from __future__ import annotations

from typing import Any

LOCAL_DEFAULT = "faiss flat"
MODES = ("hybrid", "dense", "bm25")
GOAL = 0.01  # issue 14: Milvus within 0.01 nDCG@10 of the local default


def _mb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.1f}"


def _ms(row: dict[str, Any] | None) -> str:
    return "-" if not row else f"{row['p50']:,.1f} / {row['p95']:,.1f}"


def _load(part: dict[str, Any]) -> str:
    load = part.get("load_average") or ["?"]
    return f"load average {load[0]} when it started, {part.get('wall_seconds', '?')} s"


def datasets(quality: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-dataset rows of the quality part (beside its load average and wall time)."""
    return {k: v for k, v in quality.items() if isinstance(v, dict) and LOCAL_DEFAULT in v}


def quality_table(name: str, rows: dict[str, Any]) -> list[str]:
    base = rows.get(LOCAL_DEFAULT, {})
    out = [
        f"**{name}**",
        "",
        "| backend | nDCG@10 hybrid | dense | bm25 | largest gap to faiss flat | hybrid ms p50 / p95 "
        "| dense ms p50 / p95 | bm25 ms p50 / p95 | rebuild s | index MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, row in rows.items():
        if not isinstance(row, dict) or "hybrid" not in row:
            continue
        gap = max(abs(row[m]["ndcg@10"] - base[m]["ndcg@10"]) for m in MODES) if base else float("nan")
        cells = [f"{row[m]['ndcg@10']:.4f}" for m in MODES]
        times = [_ms({"p50": row[m]["ms_p50"], "p95": row[m]["ms_p95"]}) for m in MODES]
        out.append(
            f"| {backend} | {' | '.join(cells)} | {gap:.4f} | {' | '.join(times)} | {row['rebuild_s']:.2f} "
            f"| {_mb(row['index_bytes'])} |"
        )
    return out


def goal_lines(quality: dict[str, Any]) -> list[str]:
    out = []
    for name, rows in datasets(quality).items():
        base = rows.get(LOCAL_DEFAULT)
        milvus = {b: r for b, r in rows.items() if b.startswith("milvus") and isinstance(r, dict)}
        if not base or not milvus:
            continue
        gap = max(abs(r[m]["ndcg@10"] - base[m]["ndcg@10"]) for r in milvus.values() for m in MODES)
        verdict = "met" if gap <= GOAL else "not met"
        out.append(
            f"- {name}: largest nDCG@10 gap of a Milvus backend to faiss flat, any mode: {gap:.4f}, {verdict}"
        )
    return out


def speed_table(size: str, row: dict[str, Any]) -> list[str]:
    out = [
        f"**{int(size):,} chunks** ({row.get('windows_per_chunk_mean', '?')} windows a chunk; {_load(row)})",
        "",
        "| index | build s | update 1% s | search k=50 ms p50 / p95 | 10% allowed ms p50 / p95 "
        "| exact scores of 50 ms p50 / p95 | recall@10 | disk MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in row.items():
        if not isinstance(r, dict) or "build_s" not in r:
            continue
        recall = f"{r['recall@10']:.3f}" if "recall@10" in r else "-"
        disk = r.get("disk_bytes")
        if name.endswith("milvus-lite") or name.endswith("milvus-lite hnsw"):
            disk = None  # Milvus keeps rows in its own file: the total is below
        out.append(
            f"| {name} | {r['build_s']:.2f} | {r['update_1pct_s']:.2f} | {_ms(r['search_ms'])} "
            f"| {_ms(r.get('filtered_search_ms'))} | {_ms(r['score_50_ms'])} | {recall} | {_mb(disk)} |"
        )
    total = _mb(row.get("milvus-lite disk_bytes"))
    out.append(f"| milvus-lite file (dense and BM25 collections) | | | | | | | {total} |")
    return out


def render(result: dict[str, Any]) -> str:
    lines: list[str] = []
    kinds = result.get("ann_kinds") or []
    lines.append(
        "Faiss ANN: "
        + (
            ", ".join(f"`index.dense_kind: {k}`" for k in kinds)
            if kinds
            else "absent (this tree has no `index.dense_kind`)"
        )
        + ". Every Milvus figure is **milvus-lite** (Python, in the query process), not a Milvus server."
    )
    quality = result.get("quality") or {}
    if quality:
        lines += [
            "",
            "Quality and end-to-end latency (real model, every judged query, the whole pipeline; "
            f"{_load(quality)}):",
            "",
        ]
        for name, rows in datasets(quality).items():
            lines += [*quality_table(name, rows), ""]
        lines += [f"Goal (Milvus within {GOAL} nDCG@10 of the local default):", *goal_lines(quality)]
    speed = sorted((result.get("speed") or {}).items(), key=lambda kv: int(kv[0]))
    if speed:
        lines += [
            "",
            "Index speed on synthetic chunks (each index built straight from the same texts, terms and "
            "MaxP window vectors, 384 dimensions; searches on one thread of this process). Update 1%: "
            "dense, 1% of the chunks removed and 1% added; BM25, 1% removed (bm25s rebuilds whole, "
            "Milvus deletes by id). recall@10 against the exact Faiss scan.",
        ]
    for size, row in speed:
        lines += ["", *speed_table(size, row)]
    return "\n".join(lines)
