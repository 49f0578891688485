"""Calls through a receiver in the brace languages (``symbols/receivers.py``), the error classes
of the hand-checked sample (RESULTS.md#brace-edges-by-hand): a standard-library call
(``std::move``, ``list.size()``, ``xs.iter().rev()``) is never one of the repository's definitions of
that name, and a Rust module path (``adaptors::filter_map_ok``) is that module's function, not the
method calling it."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_fixtures import make_settings

from hybrid_rag.engine import Engine

RUST_LIB = """mod adaptors;

pub fn rev<I>(iterable: I) -> I { iterable }

pub trait Itertools: Iterator {
    fn filter_map_ok(self) -> u32 where Self: Sized {
        adaptors::filter_map_ok(self)
    }
}

fn backwards(xs: Vec<u32>) -> Vec<u32> {
    xs.iter().rev().cloned().collect()
}
"""
RUST_ADAPTORS = """pub fn filter_map_ok<I>(iter: I) -> u32 { 0 }
"""
JAVA_SET = """package org.x;

public class ReferenceSet {
    public int size() { return 0; }
}
"""
JAVA_USE = """package org.x;

import java.util.List;

public class Loader {
    int count(List<String> urls) {
        return urls.size();
    }
}
"""
CPP = """struct memory_buffer {
  void move(memory_buffer& other) {}
};

void push(memory_buffer* head, memory_buffer* node) {
  head = std::move(node);
}
"""


@pytest.fixture
def engine(tmp_path: Path):
    with Engine(make_settings(tmp_path)) as engine:
        yield engine


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def callers(engine: Engine, name: str) -> list[str]:
    return [c["qualified_name"] for c in engine.references("callers", name)["callers"]]


def test_rust_iterator_calls_and_module_paths(tmp_path: Path, engine: Engine) -> None:
    root = write(tmp_path / "crate", {"src/lib.rs": RUST_LIB, "src/adaptors/mod.rs": RUST_ADAPTORS})
    engine.ingest([root])
    assert callers(engine, "rev") == []  # xs.iter().rev() is Iterator::rev
    found = engine.references("callees", "Itertools::filter_map_ok")["callees"]
    resolved = [c["definition"]["citation"] for c in found if c["status"] == "resolved"]
    assert resolved == ["adaptors/mod.rs:1-1"]  # the module's function, not the method itself


def test_java_collection_calls(tmp_path: Path, engine: Engine) -> None:
    root = write(tmp_path / "java", {"org/x/ReferenceSet.java": JAVA_SET, "org/x/Loader.java": JAVA_USE})
    engine.ingest([root])
    assert callers(engine, "ReferenceSet.size") == []  # urls.size() is List.size


def test_cpp_std_calls(tmp_path: Path, engine: Engine) -> None:
    root = write(tmp_path / "cpp", {"buffer.cpp": CPP})
    engine.ingest([root])
    assert callers(engine, "memory_buffer::move") == []  # std::move
