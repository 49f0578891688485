"""A short question in Han characters that the detector reads as Japanese, Wu or ``und``
("国王" ja, "阿拉伯" wuu, "故宫" und) is Chinese over an index holding Chinese: an English-only
dense model is not fused for it, as for a question detected as Chinese. A question with kana
stays Japanese; over an index without Chinese the detected label stands."""

from __future__ import annotations

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.lang.detect import detect_language
from hybrid_rag.lang.query import index_reading, script_language
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.settings import Settings

CHINESE = {
    "guowang.txt": "国王是一个国家的君主，他的权力通常由法律和传统决定，历史上很多国王统治了很长时间。",
    "alabo.txt": "阿拉伯半岛位于亚洲西南部，大部分地区是沙漠，阿拉伯语是那里最常用的语言。",
    "gugong.txt": "故宫位于北京市中心，是明清两代的皇家宫殿，现在是一座对公众开放的博物馆。",
    "huoche.txt": "火车站每小时都有列车开往上海，旅客可以在售票处或者网上购买车票。",
    "tushuguan.txt": "这座图书馆收藏了几十万本中文书籍，学生们每天都在这里学习和阅读。",
}
MISREAD = {"国王": "ja", "阿拉伯": "wuu", "故宫": "und"}
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("han")
    (root / "docs").mkdir()
    for name, text in CHINESE.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    settings = Settings().with_overrides(
        {"paths.data_dir": str(root / "data"), "retrieval.unread_language_dense_scale": 0.0}
    )
    engine = Engine(settings, embedder=FakeEmbedder(64, model_name=MINILM))
    engine.ingest([root / "docs"])
    yield engine
    engine.close()


@pytest.mark.parametrize("question", sorted(MISREAD))
def test_a_misdetected_han_question_gets_no_english_dense_model(minilm: Engine, question: str) -> None:
    assert detect_language(question).code == MISREAD[question]  # the misreading this pins
    hybrid = minilm.query(question, mode="hybrid")
    assert any("does not read the query's language (zh)" in n for n in hybrid.trace.notes), hybrid.trace.notes
    assert "dense" not in {t.stage for t in hybrid.trace.timings}
    bm25 = minilm.query(question, mode="bm25")
    assert [c.chunk.path for c in hybrid.chunks] == [c.chunk.path for c in bm25.chunks]


def test_the_script_names_a_language_only_where_the_index_holds_it() -> None:
    assert script_language("国王") == "zh" and script_language("東京はどこですか") == "ja"
    assert script_language("서울") == "ko" and script_language("king") is None
    assert index_reading("国王", "ja", {"zh": 50, "en": 50}, 0.05) == "zh"
    assert index_reading("国王", "ja", {"ja": 10, "zh": 50}, 0.05) == "ja"  # the index holds Japanese
    assert index_reading("東京はどこですか", "ja", {"zh": 50}, 0.05) == "ja"
    assert index_reading("国王", "ja", {"en": 50}, 0.05) == "ja"
