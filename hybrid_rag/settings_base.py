"""What every settings section shares: frozen sections that refuse unknown keys, numbers that are not
true/false, URLs checked at load (``settings.py`` builds the sections on it)."""

from __future__ import annotations

import urllib.parse
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _not_a_bool(value: Any) -> Any:
    """true / false are not counts or weights (pydantic would read them as 1 / 0)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


Int = Annotated[int, BeforeValidator(_not_a_bool)]


Float = Annotated[float, BeforeValidator(_not_a_bool)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def http_url(value: str | None, example: str) -> str | None:
    """``value`` if it is an http(s) URL with a host (None or "" mean unset: None); else a
    ValueError naming ``example``. Checked at load, so a typo stops there, not at a query."""
    if not value:
        return None
    try:
        parsed = urllib.parse.urlsplit(value)
        parsed.port  # noqa: B018 - parses the port: "host:x" fails here, not at the first request
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid URL ({exc}); expected e.g. {example}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL with a host; expected e.g. {example}")
    return value
