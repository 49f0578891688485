"""``embedding.device: cuda`` asks ONNX Runtime's CUDA provider; without ``onnxruntime-gpu``, or
when the provider does not start, it is an error that says so, never a quiet run on the CPU
(``models/devices.py``). The GPU itself is not available to these tests."""

from __future__ import annotations

import onnxruntime as ort
import pytest

from hybrid_rag.errors import ConfigError, ModelError
from hybrid_rag.models.devices import CPU, CUDA, check_session_device, onnx_providers
from hybrid_rag.models.factory import make_embedder
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
