"""Where an ONNX session runs: ``embedding.device`` (``cpu``, ``cuda``, ``cuda:N``) as ONNX Runtime
execution providers, and the check that the session really runs there.

ONNX Runtime's CUDA provider comes with the ``onnxruntime-gpu`` package, not with ``onnxruntime``;
and a session asked for CUDA whose CUDA libraries fail to load quietly runs on the CPU. Both are
errors here, named, so that "cuda" never means "the CPU, slower than expected" without a word.
The GPU path is built but has not been run on a GPU by this project (docs/first-run.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hybrid_rag.errors import ModelError

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
_DEVICE = re.compile(r"(cpu|cuda)(?::(\d+))?")


def onnx_providers(device: str, available: Sequence[str]) -> list[Any]:
    """The providers for ``device`` given the ``available`` ones (``ort.get_available_providers()``):
    ``cpu`` the CPU alone; ``cuda[:N]`` CUDA on device N (0 by default) with the CPU for the
    operators CUDA lacks. Raises :class:`ModelError` when ``device`` is not one of those or the
    installed ONNX Runtime has no CUDA provider."""
    match = _DEVICE.fullmatch(device.strip().lower())
    if match is None:
        raise ModelError(f"embedding.device {device!r} is not cpu, cuda or cuda:N for the onnx runtime")
    if match.group(1) == "cpu":
        return [CPU]
    if CUDA not in available:
        raise ModelError(
            f"embedding.device {device!r} needs ONNX Runtime's CUDA provider: install onnxruntime-gpu "
            f"in place of onnxruntime (this one offers {', '.join(available) or 'none'}), or set "
            "embedding.device: cpu"
        )
    return [(CUDA, {"device_id": int(match.group(2) or 0)}), CPU]


def check_session_device(session: Any, device: str) -> None:
    """Raise :class:`ModelError` when ``device`` asked for CUDA and ``session`` runs without it (its
    CUDA or cuDNN libraries did not load: ONNX Runtime then falls back to the CPU with a log line
    only)."""
    if device.strip().lower().startswith("cuda") and CUDA not in session.get_providers():
        raise ModelError(
            f"embedding.device {device!r}: ONNX Runtime could not start its CUDA provider (the CUDA "
            "or cuDNN libraries it needs did not load) and would run on the CPU; fix the CUDA install "
            "or set embedding.device: cpu"
        )
