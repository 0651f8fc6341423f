import pytest

from mimesis_pl.chat import join_think, split_think
from mimesis_pl.chat.think import (
    ReasoningOnlyError,
    has_think_tag,
    remove_think,
    strip_reasoning,
)


def test_no_tags():
    assert split_think("  just text ") == (None, "just text")


def test_one_block():
    assert split_think("<think>\nwhy\n</think>\n\nYes.") == ("why", "Yes.")


def test_prefilled_opener_missing():
    assert split_think("the reason</think>\n\nNo.") == ("the reason", "No.")


def test_unclosed_block_is_all_reasoning():
    assert split_think("Hi <think>cut short") == ("cut short", "Hi")


def test_several_blocks_and_stray_whitespace():
    text = "A <think> r1 </think>  B\t<think>r2</think>C"
    assert split_think(text) == ("r1\nr2", "A B C")


def test_stray_close_tag_after_blocks():
    assert split_think("<think>r</think>x</think> y") == ("r", "x y")


def test_empty_reasoning_is_not_none():
    assert split_think("<think></think>hello") == ("", "hello")


def test_public_text_spacing_kept_away_from_blocks():
    assert split_think("a  b\n\nc <think>r</think>") == ("r", "a  b\n\nc")


def test_join_round_trip():
    assert split_think(join_think("because", "Sure.")) == ("because", "Sure.")
    assert join_think(None, "x") == "x"


# -- case variants, <seed:think>, strict mode ------------------------------------


def test_tags_match_in_any_case():
    assert split_think("<Think>why</THINK> Yes.") == ("why", "Yes.")
    assert split_think("why</Think>\nNo.") == ("why", "No.")


def test_seed_think_blocks_are_split_like_think_blocks():
    assert split_think("<seed:think>a</seed:think> Hi <think>b</think>") == ("a\nb", "Hi")
    assert split_think("pre-filled</seed:think>\n\nOk.") == ("pre-filled", "Ok.")
    assert split_think("Hi <seed:think>cut") == ("cut", "Hi")


def test_has_think_tag_and_remove_think():
    assert has_think_tag("x </SEED:THINK>") and not has_think_tag("think about it")
    assert remove_think("<think>r</think>\n\n Out ") == "Out"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>\nr\n</think>\n\nA", ("r", "A")),  # one well-formed block
        ("  <think>r</think>A", ("r", "A")),  # leading whitespace before the opener is allowed
        ("r</think>A", ("r", "A")),  # pre-filled opener
        ("<seed:think>r</seed:think>A", ("r", "A")),
        ("plain answer", (None, "")),  # no close tag: malformed for a reasoning model
        ("x<think>r</think>A", (None, "")),  # text before the opener
        ("<think>a</think>B<think>c</think>D", (None, "")),  # two blocks
        ("<think>a</think></think>B", (None, "")),  # two closes
        ("<think>a<think>b</think>B", (None, "")),  # two opens
        ("<think>never closed", (None, "")),
    ],
)
def test_strict_split(text, expected):
    assert split_think(text, strict=True) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello there", "Hello there"),
        ("<think>private</think>\nHello", "Hello"),
        ("Thinking Process:\n1. be terse\n\nMessage: hi, my order is late", "hi, my order is late"),
        ("**Thinking Process:**\n- x\n**Final Answer:** Where is it?", "Where is it?"),
        ("Reasoning\nI should ask.\nResponse: first\nUser message: second", "second"),  # last label wins
        ("Chain of thought: only musing, no hand-off", ""),
        ("My reasoning: is fine", "My reasoning: is fine"),  # no header at the start: untouched
    ],
)
def test_strip_reasoning(text, expected):
    assert strip_reasoning(text) == expected


def test_strip_reasoning_strict_raises_on_reasoning_only_turns():
    with pytest.raises(ReasoningOnlyError, match="only reasoning"):
        strip_reasoning("<think>all private</think>", strict=True)
    with pytest.raises(ReasoningOnlyError):
        strip_reasoning("Thought process: hmm", strict=True)
    assert strip_reasoning("<think>x</think>ok", strict=True) == "ok"
