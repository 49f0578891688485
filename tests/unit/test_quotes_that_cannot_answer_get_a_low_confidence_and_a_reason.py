"""A context whose quoted lines cannot answer the question gets a low confidence and says why,
whatever their scores: a how-to question asking for code answered by prose (issue 42: "как
написать код для сброса пароля пользователя?" over a Russian page on resetting passwords got
confidence .84), and quotes that share no word and no language with the question where the dense
model does not vouch for them. A question the prose answers, and a code question answered by
code, keep their confidence."""

from __future__ import annotations

import pytest
from context_cases import ingested

from hybrid_rag.context.answer_gap import GAP_CAP, Quoted, answer_gap, asks_for_code

RESETS = """# Сброс пароля

Пароль пользователя сбрасывает администратор в консоли: он открывает карточку пользователя и
нажимает «Сбросить пароль». Пользователь получает письмо со ссылкой для сброса пароля.
"""
BACKUPS = """# Резервные копии

Резервные копии базы данных делаются каждую ночь и хранятся тридцать дней.
"""
GEOMETRY = '''def polygon_area(points):
    """The area of a simple polygon, by the shoelace formula."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2
'''
RESET_CODE = '''def reset_password(user):
    """Сброс пароля пользователя: новый пароль и письмо со ссылкой."""
    token = new_token(user)
    send_reset_link(user, token)
    return token
'''
HOW_TO_CODE = "как написать код для сброса пароля пользователя?"
ANSWERED = "кто сбрасывает пароль пользователя?"
THRESHOLD = 0.25


@pytest.fixture(scope="module")
def prose_only(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("prose-only")
    root = tmp / "docs"
    root.mkdir()
    (root / "resets.md").write_text(RESETS)
    (root / "backups.md").write_text(BACKUPS)
    (root / "geometry.py").write_text(GEOMETRY)
    engine = ingested(tmp, root)
    yield engine
    engine.close()


def test_a_how_to_code_question_answered_by_prose_is_weak_and_says_why(prose_only) -> None:
    context = prose_only.context(HOW_TO_CODE, max_tokens=400)[0]
    assert context.quotes, "something is quoted"
    assert any("asks for code" in note for note in context.notes), context.notes
    assert context.confidence <= GAP_CAP < THRESHOLD
    assert context.weak_evidence
    assert "asks for code" in context.render()


def test_a_question_the_prose_answers_keeps_its_confidence(prose_only) -> None:
    context = prose_only.context(ANSWERED, max_tokens=400)[0]
    assert not any("asks for code" in n or "share no word" in n for n in context.notes), context.notes
    assert context.confidence > GAP_CAP


def test_a_how_to_code_question_answered_by_code_is_not_flagged(tmp_path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "resets.md").write_text(RESETS)
    (root / "reset.py").write_text(RESET_CODE)
    engine = ingested(tmp_path, root)
    try:
        context = engine.context(HOW_TO_CODE, max_tokens=400)[0]
    finally:
        engine.close()
    assert any(q.path.endswith("reset.py") for q in context.quotes), [q.path for q in context.quotes]
    assert not any("asks for code" in note for note in context.notes), context.notes


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        (HOW_TO_CODE, True),
        ("how do I write a function that parses the config?", True),
        ("show me example code for retries", True),
        ("código para ler um arquivo csv", True),
        ("wie kann ich eine Funktion schreiben, die Dateien liest?", True),
        ("how long is a password reset link valid?", False),
        ("what does error code 42 mean?", False),
        ("что означает код ошибки 42?", False),
        ("как написать письмо в поддержку?", False),  # writing a letter, not code
        (ANSWERED, False),
    ],
)
def test_which_questions_ask_for_code(question: str, asks: bool) -> None:
    assert asks_for_code(question) is asks


def test_prose_that_quotes_a_statement_holds_code() -> None:
    quotes = [Quoted("Call it as:\n\n```python\nreset_password(user)\n```", code=False, lang="en")]
    assert answer_gap("how do I write code to reset a password?", quotes) is None
    # an unrelated function quoted beside the prose does not answer it
    prose = Quoted("Passwords are reset by an administrator from the console.", code=False, lang="en")
    area = Quoted("def polygon_area(points):\n    return abs(total) / 2", code=True, lang="und", dense=0.1)
    assert "asks for code" in (answer_gap("how do I write code to reset a password?", [prose, area]) or "")
    assert (
        answer_gap("how do I write code to reset a password?", [prose, Quoted(area.text, True, "und", 0.9)])
        is None
    )


def test_quotes_linked_by_no_word_no_language_and_no_dense_vouch_are_a_gap() -> None:
    text = "Backups run every night and are kept for thirty days."
    question = "сколько действует ссылка для сброса пароля?"
    reason = answer_gap(question, [Quoted(text, code=False, lang="en", dense=0.1)])
    assert reason is not None and "share no word and no language" in reason
    # the model that reads both languages vouches for them: a cross-lingual answer stands
    assert answer_gap(question, [Quoted(text, code=False, lang="en", dense=0.8)]) is None
    # a shared name or number links them, as does a quote in the question's language
    assert answer_gap("сколько хранятся Backups?", [Quoted(text, code=False, lang="en", dense=0.1)]) is None
    russian = [Quoted("Резервные копии хранятся тридцать дней.", code=False, lang="ru", dense=0.1)]
    assert answer_gap(question, russian) is None
