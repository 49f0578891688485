"""``features.path_match``: the question's words against a file's name and folders, both split
like identifiers (``parseArgs`` -> parse, args; ``help_formatter.py`` -> help, formatter): a
file the question names moves up, a word of the file name counting more than a folder's."""

from __future__ import annotations

from code_rank_cases import ranked

from hybrid_rag.retrieval.code_rank import apply_path_match, path_words


def test_a_path_is_split_like_identifiers() -> None:
    assert path_words("src/argParser/HelpFormatter.ts") == ({"help", "formatter"}, {"src", "arg", "parser"})


def test_the_file_the_question_names_moves_up() -> None:
    results = ranked(("lib/command.js", 2.0), ("lib/suggestSimilar.js", 1.8), ("lib/option.js", 1.7))
    out = apply_path_match(results, "how are similar names suggested for a typo?", 0.5, 1.0)
    assert out[0].path == "lib/suggestSimilar.js"
    assert out[0].breakdown["path_match"] == 2.0  # suggest(ed) and similar, in the file name


def test_a_folder_word_counts_half_a_file_name_word() -> None:
    results = ranked(("auth/session.go", 1.0), ("store/auth.go", 1.0))
    out = apply_path_match(results, "where is auth checked?", 0.5, 1.0)
    assert {r.path: r.breakdown["path_match"] for r in out} == {"store/auth.go": 1.0, "auth/session.go": 0.5}
    assert out[0].path == "store/auth.go"


def test_a_question_whose_words_name_no_file_changes_nothing() -> None:
    results = ranked(("lib/command.js", 2.0), ("lib/option.js", 1.8))
    out = apply_path_match(results, "why does the output wrap at eighty columns?", 0.5, 1.0)
    assert [(r.id, r.score) for r in out] == [(r.id, r.score) for r in results]
