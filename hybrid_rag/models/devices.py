"""Where an ONNX session runs: ``embedding.device`` (``cpu``, ``cuda``, ``cuda:N``) as ONNX Runtime
execution providers, and the check that the session really runs there.

ONNX Runtime's CUDA provider comes with the ``onnxruntime-gpu`` package, not with ``onnxruntime``;
and a session asked for CUDA whose CUDA libraries fail to load quietly runs on the CPU. Both are
errors here, named, so that "cuda" never means "the CPU, slower than expected" without a word.
The CUDA libraries that pip's ``nvidia-*`` packages install (``onnxruntime-gpu[cuda,cudnn]``) are not
on the loader's path; ONNX Runtime's own ``preload_dlls`` loads them before a CUDA session starts.
Run on an H200 with onnxruntime-gpu 1.31 (RESULTS.md#gpu-embedding).
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
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


_PRELOADED: dict[str, str] = {}
_PRELOAD_LOCK = threading.Lock()


def load_cuda_libraries(ort: Any) -> str:
    """ONNX Runtime's ``preload_dlls``, once a process: it loads the CUDA and cuDNN libraries of
    pip's ``nvidia-*`` packages beside onnxruntime (else the loader's own path, ``LD_LIBRARY_PATH``),
    which a session's CUDA provider then finds already loaded. Returns what it printed (the
    libraries that failed to load, for the error :func:`check_session_device` raises); it prints to
    stdout, which is the MCP server's channel, so its words are kept, not printed."""
    with _PRELOAD_LOCK:
        if "said" not in _PRELOADED:
            preload = getattr(ort, "preload_dlls", None)  # onnxruntime >= 1.21
            said = io.StringIO()
            if preload is not None:
                with contextlib.redirect_stdout(said):
                    try:
                        preload()
                    except Exception as exc:  # a bad directory; the session's own load then decides
                        print(f"preload_dlls: {exc}")
            _PRELOADED["said"] = " ".join(said.getvalue().split())
        return _PRELOADED["said"]


def check_session_device(session: Any, device: str, preload_said: str = "") -> None:
    """Raise :class:`ModelError` when ``device`` asked for CUDA and ``session`` runs without it (its
    CUDA or cuDNN libraries did not load: ONNX Runtime then falls back to the CPU with a log line
    only). ``preload_said``: what :func:`load_cuda_libraries` returned, quoted in the message."""
    if device.strip().lower().startswith("cuda") and CUDA not in session.get_providers():
        detail = f" (ONNX Runtime's preload said: {preload_said[:400]})" if preload_said else ""
        raise ModelError(
            f"embedding.device {device!r}: ONNX Runtime could not start its CUDA provider (the CUDA "
            f"or cuDNN libraries it needs did not load{detail}) and would run on the CPU; install "
            "onnxruntime-gpu[cuda,cudnn] or put CUDA's libraries on LD_LIBRARY_PATH, or set "
            "embedding.device: cpu"
        )
