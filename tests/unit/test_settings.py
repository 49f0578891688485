from pathlib import Path

import pytest

from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import Settings, load_settings

REPO = Path(__file__).resolve().parents[2]


def test_default_yaml_spells_out_exactly_the_built_in_defaults():
    assert load_settings(REPO / "configs" / "default.yaml", environ={}) == Settings()


def test_the_repository_profile_is_the_defaults_with_bge_small_embedding():
    profile = load_settings(REPO / "configs" / "repository.yaml", environ={})
    assert profile.embedding.model == "bge-small-en-v1.5"
    assert profile.with_overrides({"embedding.model": Settings().embedding.model}) == Settings()


def test_yaml_file_and_environment_override_in_order(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("retrieval:\n  dense_top_k: 20\n  fusion: weighted\nfeatures:\n  rerank: true\n")
    env = {"HYBRID_RAG_RETRIEVAL__DENSE_TOP_K": "30", "HYBRID_RAG_HOME": str(tmp_path / "home")}
    s = load_settings(cfg, environ=env)
    assert s.retrieval.dense_top_k == 30
    assert s.retrieval.fusion == "weighted"
    assert s.features.rerank is True
    assert s.data_dir == tmp_path / "home"
    assert s.indices_dir == tmp_path / "home" / "indices"


def test_explicit_data_dir_beats_environment(tmp_path):
    s = load_settings(None, data_dir=tmp_path / "a", environ={"HYBRID_RAG_HOME": str(tmp_path / "b")})
    assert s.data_dir == tmp_path / "a"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("retrieval:\n  dense_topk: 5\n", "retrieval.dense_topk"),
        ("retrieval:\n  dense_top_k: many\n", "retrieval.dense_top_k"),
        ("nonsense_section:\n  a: 1\n", "nonsense_section"),
        ("retrieval:\n  fusion: average\n", "retrieval.fusion"),
        ("chunking:\n  min_tokens: 900\n", "min_tokens"),
    ],
)
def test_bad_keys_and_types_fail_at_load_naming_the_key(tmp_path, text, needle):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load_settings(cfg, environ={})


def test_malformed_yaml_and_missing_file_are_clear_errors(tmp_path):
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("retrieval: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(cfg, environ={})
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "absent.yaml", environ={})
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(tmp_path / "list.yaml", environ={})


def test_unknown_environment_key_is_named():
    with pytest.raises(ConfigError, match="HYBRID_RAG_RETRIEVAL__NOPE|retrieval.nope"):
        load_settings(None, environ={"HYBRID_RAG_RETRIEVAL__NOPE": "1"})


def test_variables_that_are_not_settings_are_left_alone():
    env = {"HYBRID_RAG_DATASETS": "/data/beir", "HYBRID_RAG_MODEL_CACHE": "/cache", "HYBRID_RAG_API_KEY": "k"}
    assert load_settings(None, environ=env) == load_settings(None, environ={})


def test_with_overrides_validates():
    s = Settings().with_overrides({"features.rerank": True, "mmr.mmr_lambda": 0.5})
    assert s.features.rerank and s.mmr.mmr_lambda == 0.5
    with pytest.raises(ConfigError, match="mmr.mmr_lambda"):
        Settings().with_overrides({"mmr.mmr_lambda": 3})


def test_settings_are_frozen():
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error type is an implementation detail
        Settings().retrieval.top_k = 3  # type: ignore[misc]
