"""Keyword helpers: exact values on small cases (both sides of every rule go through them)."""

from mimesis_pl.envs.text import content_words, question_keywords, sentences, stem, word_ngrams


def test_stem_folds_common_inflections():
    assert {stem(w) for w in ("kills", "killed", "killing", "kill")} == {"kill"}
    assert stem("running") == stem("run") == "run"
    assert stem("stories") == stem("story")
    assert stem("horses") == stem("horse")
    assert stem("died") == stem("dies") == stem("die") == "die"


def test_content_and_question_keywords():
    assert content_words("The woman's nails broke!") == {"woman", "nail", "brok"}
    assert question_keywords("Is it something associated with fuzzy skin?") == {"fuzzy", "skin"}
    assert question_keywords("What is it?") == set()


def test_sentences_and_ngrams():
    assert sentences("One. Two!  Three?") == ["One.", "Two!", "Three?"]
    assert word_ngrams("a b c d", 3) == {("a", "b", "c"), ("b", "c", "d")}
