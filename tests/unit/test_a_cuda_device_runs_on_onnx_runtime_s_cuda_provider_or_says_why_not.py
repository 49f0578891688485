"""``embedding.device: cuda`` asks ONNX Runtime's CUDA provider; without ``onnxruntime-gpu``, or
when the provider does not start, it is an error that says so, never a quiet run on the CPU
(``models/devices.py``). The GPU itself is not available to these tests: the run on one is
``benchmarks/_gpu_embedding.py`` (RESULTS.md#gpu-embedding)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import onnxruntime as ort
import pytest

from hybrid_rag.errors import ConfigError, ModelError
from hybrid_rag.models import devices
from hybrid_rag.models.devices import CPU, CUDA, check_session_device, load_cuda_libraries, onnx_providers
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.onnx_runtime import OnnxFiles, OnnxModel
from hybrid_rag.settings import DEFAULT_EMBEDDING_MODEL, EmbeddingSettings, Settings


class _Session:
    def __init__(self, providers: list[str]) -> None:
        self.providers = providers

    def get_providers(self) -> list[str]:
        return self.providers


def test_cpu_runs_on_the_cpu_provider_alone() -> None:
    assert onnx_providers("cpu", [CUDA, CPU]) == [CPU]


def test_cuda_n_asks_that_device_with_the_cpu_behind_it() -> None:
    assert onnx_providers("cuda", [CUDA, CPU]) == [(CUDA, {"device_id": 0}), CPU]
    assert onnx_providers("cuda:1", [CUDA, CPU]) == [(CUDA, {"device_id": 1}), CPU]


def test_cuda_without_the_gpu_package_names_onnxruntime_gpu() -> None:
    with pytest.raises(ModelError, match="onnxruntime-gpu.*CPUExecutionProvider"):
        onnx_providers("cuda", [CPU])


def test_a_session_that_fell_back_to_the_cpu_is_an_error_when_cuda_was_asked() -> None:
    with pytest.raises(ModelError, match="could not start its CUDA provider"):
        check_session_device(_Session([CPU]), "cuda:0")
    check_session_device(_Session([CUDA, CPU]), "cuda")
    check_session_device(_Session([CPU]), "cpu")


def test_the_cuda_libraries_are_preloaded_once_and_their_failures_are_kept_off_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ONNX Runtime's ``preload_dlls`` prints what failed to stdout, the MCP server's channel: the
    words go into the error instead, and the preload runs once a process."""
    monkeypatch.setattr(devices, "_PRELOADED", {})
    calls: list[int] = []

    def preload() -> None:
        calls.append(1)
        print("Failed to load libcublasLt.so.13: cannot open shared object file")

    fake_ort = SimpleNamespace(preload_dlls=preload)
    said = load_cuda_libraries(fake_ort)
    assert load_cuda_libraries(fake_ort) == said
    assert calls == [1]
    assert capsys.readouterr().out == ""
    with pytest.raises(
        ModelError, match=r"could not start.*preload said: Failed to load libcublasLt\.so\.13"
    ):
        check_session_device(_Session([CPU]), "cuda", said)


def test_an_onnx_runtime_without_a_preload_is_asked_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "_PRELOADED", {})
    assert load_cuda_libraries(SimpleNamespace()) == ""


def test_a_device_that_is_no_device_is_refused_when_the_settings_load() -> None:
    with pytest.raises(ConfigError, match="device"):
        Settings().with_overrides({"embedding.device": "gpu0"})


@pytest.mark.skipif(CUDA in ort.get_available_providers(), reason="this onnxruntime has CUDA")
@pytest.mark.slow
def test_the_packaged_model_on_cuda_without_the_provider_fails_instead_of_embedding_on_the_cpu() -> None:
    embedder = make_embedder(EmbeddingSettings(model=DEFAULT_EMBEDDING_MODEL, device="cuda"))
    with pytest.raises(ModelError, match="onnxruntime-gpu"):
        embedder.embed_passages(["def parse_filter(text): ..."])


@pytest.mark.skipif(CUDA in ort.get_available_providers(), reason="this onnxruntime has CUDA")
@pytest.mark.slow
def test_multilingual_e5_on_onnx_runtime_takes_the_device_too() -> None:
    embedder = make_embedder(EmbeddingSettings(model="multilingual-e5-small", device="cuda"))
    with pytest.raises(ModelError, match="onnxruntime-gpu"):
        embedder.embed_passages(["Пароль сбрасывается в настройках."])


@pytest.mark.parametrize(("device", "rebuilt"), [("cpu", True), ("cuda", False), ("cuda:1", False)])
def test_only_a_cpu_session_is_rebuilt_when_the_free_cores_change(
    device: str, rebuilt: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``threads: auto`` re-tunes a CPU session's threads; a GPU session (seconds to start) stays."""
    model = OnnxModel(OnnxFiles("m", tmp_path, None, tmp_path / "t.json", 256), "auto", device=device)
    model._retune = SimpleNamespace(wanted=lambda texts: 7)  # type: ignore[assignment]
    model._onnx_file = tmp_path / "model.onnx"
    made: list[tuple[int | None, str]] = []
    monkeypatch.setattr(OnnxModel, "_new_session", staticmethod(lambda f, t, d="cpu": made.append((t, d))))
    model.retune(500)
    assert made == ([(7, device)] if rebuilt else [])
