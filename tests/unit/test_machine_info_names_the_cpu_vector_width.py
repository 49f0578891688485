"""A measurement names the CPU's vector width: two 2-core machines of the same name embed at rates
twice apart when one has AVX-512 and the other AVX2 only (RESULTS.md#cpu-vector-width)."""

from __future__ import annotations

import pytest

from hybrid_rag.evaluation.bench import cpu_simd, machine_info


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"sse4_2", "avx", "avx2", "fma"}, "AVX2"),
        ({"avx2", "avx512f", "avx512bw"}, "AVX-512"),
        ({"avx2", "avx512f", "avx512_vnni"}, "AVX-512 VNNI"),
        ({"avx2", "avx_vnni"}, "AVX-VNNI"),
        ({"avx2", "avx512f", "avx512_vnni", "amx_int8", "amx_tile"}, "AMX"),
        ({"sse2", "sse4_2"}, None),
        (set(), None),
    ],
)
def test_the_widest_vector_instructions_are_named(flags: set[str], expected: str | None) -> None:
    assert cpu_simd(flags) == expected


def test_machine_info_reads_this_machine_s_flags() -> None:
    info = machine_info()
    assert "cpu_simd" in info
    assert info["cpu_simd"] == cpu_simd()
