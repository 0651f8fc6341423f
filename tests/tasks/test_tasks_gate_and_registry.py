"""The think-format gate, answer extraction and the data_source registry, on hand-worked cases."""

from __future__ import annotations

import pytest

from mimesis_pl.tasks import UnknownTaskError, get_task, known_data_sources
from mimesis_pl.tasks.answers import (
    bare_letter,
    extract_answer,
    token_f1,
)
from mimesis_pl.tasks.registry import BUILTIN_TASKS
from mimesis_pl.tasks.think_format import (
    FormatCheck,
    GeneratedTurn,
    check_think_format,
    clean_response,
    gated_reward,
    split_think_strict,
)


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\nI think so\n</think>\n\n<answer>A</answer>", ("I think so", "<answer>A</answer>")),  # pre-filled opener
        ("<think>r</think> hi", ("r", "hi")),
        ("no tags at all", (None, "")),  # the opener was pre-filled, so no close = malformed
        ("<THINK>r</THINK> hi", (None, "")),  # the reference's tags are lower case (S79)
        ("<think>a</think><think>b</think>x", (None, "")),  # two closes
        ("x <think>a</think> y", (None, "")),  # opener not at the start
        ("a</think>b</think>", (None, "")),
        ("<think>cut short", (None, "")),
    ],
)
def test_strict_split(text, expected):
    assert split_think_strict(text) == expected


def test_gate_needs_four_reasoning_tokens_an_answer_and_no_truncation():
    ok = GeneratedTurn("one two three four</think>answer", truncated=False)
    short = GeneratedTurn("one two three</think>answer", truncated=False)
    no_answer = GeneratedTurn("one two three four</think>  ", truncated=False)
    cut = GeneratedTurn("one two three four</think>answer", truncated=True)
    assert check_think_format([ok], True, words) == FormatCheck(True, 4.0)
    assert check_think_format([short], True, words) == FormatCheck(False, 3.0)
    assert check_think_format([no_answer], True, words) == FormatCheck(False, 0.0)
    assert check_think_format([cut], True, words) == FormatCheck(False, 4.0)
    # one bad turn fails the rollout; think_tokens averages the turns that split: (4 + 3) / 2
    assert check_think_format([ok, short], True, words) == FormatCheck(False, 3.5)
    assert check_think_format([], True, words).correct is False


def test_gate_with_thinking_off_rejects_an_opened_think_block():
    assert check_think_format([GeneratedTurn("hello there", False)], False, words).correct
    assert not check_think_format([GeneratedTurn("  <think>x</think>hi", False)], False, words).correct
    assert check_think_format([GeneratedTurn("cut sho", True)], False, words).correct  # only the opener is checked


def test_with_thinking_off_the_format_is_logged_but_the_gate_never_fires():
    opened = check_think_format([GeneratedTurn("<think>x</think>hi", False)], False, words)
    assert not opened.correct  # logged as all/format_correct 0 ...
    assert gated_reward(0.8, opened, is_train=True) == 0.8  # ... but the reward stands, as in the reference
    assert gated_reward(0.8, check_think_format([], False, words), is_train=True) == 0.8
    assert gated_reward(0.8, check_think_format([], True, words), is_train=True) == 0.0


def test_gate_zeroes_the_reward_in_training_only():
    bad, good = FormatCheck(False, 0.0), FormatCheck(True, 5.0)
    assert gated_reward(0.8, bad, is_train=True) == 0.0
    assert gated_reward(0.8, bad, is_train=False) == 0.8
    assert gated_reward(0.8, good, is_train=True) == 0.8


def test_cleaned_text_never_carries_tagged_reasoning():
    assert clean_response("secret plan</think>hi there", True) == "hi there"
    assert clean_response("<think>secret plan cut short", True) == ""  # a tag of the wrong shape
    assert clean_response("plain text, no tag", True) == "plain text, no tag"  # the reference's fallback (S78)
    assert clean_response("<think>secret</think>hi", False) == "hi"


def test_answer_extraction_is_strict():
    assert extract_answer("<answer> B </answer>") == "B"
    assert extract_answer("<answer>A</answer> then <answer>C</answer>") == "A"  # the first, as the reference
    assert extract_answer("the answer is B") is None
    assert bare_letter(" b ") == "B" and bare_letter("(b)") is None and bare_letter("b.") is None  # the reference's
    assert bare_letter("E") is None and bare_letter("B because") is None and bare_letter(None) is None
    assert bare_letter("a", "AB", case_sensitive=True) is None and bare_letter("A", "AB", case_sensitive=True) == "A"
    # SQuAD F1: pred {red, box}, gold {box}: precision 1/2, recall 1 → 2/3
    assert token_f1("the red box", "a box") == pytest.approx(2 / 3)
    assert token_f1("the-cat", "cat") == 1.0  # articles are removed before punctuation, as in the reference
    assert token_f1("", "") == 0.0 and token_f1("The", "the") == 0.0  # nothing left to compare


def test_unknown_data_source_lists_the_known_ones():
    with pytest.raises(UnknownTaskError) as err:
        get_task("hitomm")
    message = str(err.value)
    assert "hitomm" in message
    for key in ("hitom", "fantom", "alignx_demo"):
        assert key in message
    assert known_data_sources() == sorted(BUILTIN_TASKS)


def test_every_registered_task_builds_and_is_keyed_by_its_data_source():
    for key in BUILTIN_TASKS:
        assert get_task(key).data_source == key


def test_a_task_module_is_imported_only_when_asked_for(monkeypatch):
    import sys

    from mimesis_pl.tasks import registry

    monkeypatch.setitem(registry._EXTRA, "broken", registry.TaskSpec("broken", "mimesis_pl.tasks.does_not_exist:task"))
    with pytest.raises(ModuleNotFoundError):
        get_task("broken")
    assert get_task("hitom").data_source == "hitom"  # one broken task does not break another
    assert "mimesis_pl.tasks.does_not_exist" not in sys.modules
