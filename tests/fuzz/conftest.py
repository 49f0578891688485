"""Hypothesis profiles for the fuzz suite: ``default`` is short (the everyday run), ``ci`` longer
(``HYPOTHESIS_PROFILE=ci``, set by .ci/run)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}
settings.register_profile("default", max_examples=40, **_COMMON)
settings.register_profile("ci", max_examples=300, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
