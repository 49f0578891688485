"""The answer prompt: a system message and a user message around a built context.

Both come from settings (``context.system_prompt``, ``context.prompt_template``). The template
takes two fields, ``{context}`` (the rendered context) and ``{question}``; a template that names
any other field, or lacks ``{context}``, is a ConfigError naming the key. The default tells the
model to answer only from the context, to cite it as ``[n]``, and to say so when the context
does not hold the answer; it makes no assumption about code or prose.

>>> system, user = build_prompt("What is RRF?", "# Context\\n[1] a.md:1-1\\n> RRF fuses ranks.\\n")
>>> user.startswith("# Context") and user.count("What is RRF?") == 1
True
"""

from __future__ import annotations

import re
import string

from hybrid_rag.context.render import Context
from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import ContextSettings

FIELDS = frozenset({"context", "question"})
ANSWER_LANGUAGE = "Answer in the language of the question (ISO 639-1 code: {lang})."
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)
_CITATIONS = re.compile(r"(?<![\w)\]])((?:\[\s*\d+(?:\s*,\s*\d+)*\s*\])+)")


def template_fields(template: str) -> set[str]:
    """The ``{field}`` names a format string uses (``{{`` and ``}}`` are literal braces)."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ConfigError(f"context.prompt_template is not a valid template: {exc}") from None


def build_prompt(
    question: str, context: Context | str, settings: ContextSettings | None = None, *, lang: str | None = None
) -> tuple[str, str]:
    """(system, user) messages asking ``question`` about ``context`` (a Context or its rendered text).

    ``lang``: the question's language (ISO 639-1); one other than English (and ``und``) adds
    :data:`ANSWER_LANGUAGE` to the system message, so the answer comes in the question's language
    whatever the context's.

    >>> build_prompt("Что такое RRF?", "ctx", lang="ru")[0].endswith("(ISO 639-1 code: ru).")
    True
    """
    cfg = settings if settings is not None else ContextSettings()
    fields = template_fields(cfg.prompt_template)
    unknown = sorted(fields - FIELDS)
    if unknown:
        raise ConfigError(
            f"context.prompt_template uses unknown field(s) {', '.join(unknown)}; valid: context, question"
        )
    if "context" not in fields:
        raise ConfigError("context.prompt_template must contain {context}")
    text = context.render() if isinstance(context, Context) else context
    user = cfg.prompt_template.format(context=text.rstrip("\n"), question=question.strip())
    if "question" not in fields:
        user += f"\n\nQuestion: {question.strip()}"
    system = cfg.system_prompt
    if lang and lang not in ("en", "und"):
        system = f"{system.rstrip()} {ANSWER_LANGUAGE.format(lang=lang)}".strip()
    return system, user


def cited_ids(answer: str) -> list[int]:
    """The citation ids an answer uses, ascending: ``[1]``, ``[2][3]``, ``[1, 2]``; brackets inside
    code (fenced or inline) or right after a word or a bracket (``x[0]``, ``f()[1]``) are not citations.

    >>> cited_ids("Fused by RRF [2][3], k = 60 [1, 3]; see `ranks[0]`.")
    [1, 2, 3]
    """
    text = _CODE.sub(" ", answer)
    return sorted({int(n) for chain in _CITATIONS.findall(text) for n in re.findall(r"\d+", chain)})
