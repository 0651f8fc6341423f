"""Hidden values of a task, leak matching with normalisation, and the privileged-text scan."""

from __future__ import annotations

from mimesis_pl.csd.leaks import (
    candidate_values,
    find_leaks,
    hidden_values,
    is_specific,
    scan_for_privileged,
    tokens,
    unseen_values,
)

AMAZON = {
    "env_name": "TelepathyGym",
    "title": "Amazon River",
    "category": "body_of_water",
    "ground_truth": "Amazon River - the second longest river in the world, running through the Amazon rainforest.",
}


def test_hidden_values_collect_specific_leaves_and_words():
    values = hidden_values(AMAZON)
    assert values[:3] == ["Amazon River", "Amazon", "River"]
    assert {"rainforest", "longest", "body of water"} <= set(values)
    assert "TelepathyGym" not in values  # bookkeeping field
    for common in ("the", "world", "second", "in"):
        assert common not in values


def test_values_already_public_are_not_secret():
    values = hidden_values(AMAZON, public_text="I am thinking of a significant body of water. Is it a river?")
    assert "body of water" not in values and "River" not in values
    assert "Amazon River" in values and "Amazon" in values


def test_nested_fields_numbers_and_short_leaves():
    hidden = {
        "id": "task-123456",
        "answer": "no",  # too short and common to be a value by itself
        "budget": 1500,
        "price": "-17.0",
        "details": [{"aspect": "seating", "preference": "window seat"}, {"preference": "Low"}],
        "flag": True,
    }
    values = hidden_values(hidden)
    # "seat" is "seating" once stemmed: one value
    assert values == ["1500", "-17.0", "seating", "window seat", "window"]


def test_find_leaks_normalises_case_punctuation_plurals_and_numbers():
    values = ["Violin", "Amazon River", "1500", "17.0"]
    assert find_leaks("Ask whether it is one of the VIOLINS.", values) == ["Violin"]
    assert find_leaks("maybe the amazon-river?", values) == ["Amazon River"]
    assert find_leaks("the Amazon is big; a river too", values) == []  # a phrase needs its words in a row
    assert find_leaks("a budget near 1,500 dollars", values) == ["1500"]
    assert find_leaks("it is 17 exactly", values) == ["17.0"]
    assert find_leaks("It is 170 or 15", values) == []
    assert tokens("Violins' Bows") == tokens("violin bow")


def test_is_specific():
    assert is_specific("violin") and is_specific("rainforest") and is_specific("42")
    assert not is_specific("user") and not is_specific("the") and not is_specific("7") and not is_specific("red")


def test_scan_for_privileged_finds_whole_texts_and_long_runs():
    secret = "The entity is a violin and the question about bows is clearly true for it"
    messages = [
        {"role": "system", "content": "Play the game."},
        {"role": "user", "content": "Is it played with a bow?"},
        {"role": "tool", "content": f"Yes. ({secret})"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": {"content": secret[4:60]}}}]},
        {"role": "tool", "content": "Yes, the question about bows is clearly true for it, friend"},
    ]
    hits = scan_for_privileged(messages, [secret, "   "])
    assert [(h.message, h.privileged) for h in hits] == [(2, 0), (3, 0), (4, 0)]
    # A reply that legitimately restates part of its reasoning can be declared public.
    public = ["the question about bows is clearly true for it"]
    assert [(h.message) for h in scan_for_privileged(messages, [secret], public_texts=public)] == [2, 3]
    assert scan_for_privileged(messages[:2], [secret]) == []


def test_unseen_values_per_prefix_of_a_conversation():
    values = candidate_values(AMAZON)
    texts = ["I am thinking of a body of water.", "Is it a river?", "Is it the Amazon River?"]
    per_prefix = unseen_values(values, texts)
    assert len(per_prefix) == 4 and per_prefix[0] == values
    assert "body of water" not in per_prefix[1] and "River" in per_prefix[1]
    assert "River" not in per_prefix[2] and "Amazon River" in per_prefix[2]
    assert "Amazon River" not in per_prefix[3] and "rainforest" in per_prefix[3]
    # a phrase split over two texts was not said
    assert "Amazon River" in unseen_values(["Amazon River"], ["the Amazon", "River"])[2]
    for p, _text in enumerate(texts):
        assert per_prefix[p + 1] == hidden_values(AMAZON, public_text="\n\n".join(texts[: p + 1]))
