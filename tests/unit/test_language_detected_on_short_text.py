"""The language of a question, a paragraph, and of text no detector is sure of."""

from __future__ import annotations

import pytest

from hybrid_rag.lang.detect import UNDETERMINED, Language, detect_language


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("как сбросить пароль", "ru"),
        ("Como redefinir a senha do usuário?", "pt"),
        ("How can I reset my password?", "en"),
        ("数据库连接失败怎么办", "zh"),
        ("วิธีรีเซ็ตรหัสผ่าน", "th"),
        ("Wie setze ich mein Passwort zurück?", "de"),
    ],
)
def test_short_question_gets_its_language(text: str, code: str) -> None:
    detected = detect_language(text)
    assert detected.code == code
    assert detected.determined
    assert 0.5 <= detected.confidence <= 1.0


@pytest.mark.parametrize("text", ["", "   ", "12345", "hello", "reset password"])
def test_text_without_a_clear_language_is_undetermined(text: str) -> None:
    detected = detect_language(text)
    assert detected.code == UNDETERMINED
    assert not detected.determined


def test_multiline_paragraph_is_detected_as_one_text() -> None:
    text = "Защита уступила всего 308 очков.\nОна заняла шестое место в лиге.\n"
    assert detect_language(text).code == "ru"


def test_language_is_a_frozen_value() -> None:
    lang = Language("ru", 0.9)
    with pytest.raises(AttributeError):
        lang.code = "en"  # type: ignore[misc]
