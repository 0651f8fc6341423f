"""One reader of a reply's JSON object, each reference's reading named (issue #38): the same replies, hand-read."""

from __future__ import annotations

import pytest

from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import RetryableError
from mimesis_pl.llm.replies import reply_json_object

FENCED = 'Here:\n```json\n{"a": 1}\n```\nand {"b": {"c": 2, "d": 3}}'
PYTHON = "{'judgment': 'No', 'ok': True}"
TWO = 'first {"x": 1} then {"y": 22, "z": 333}'
LIST = '[{"a": 1}]'
THINK = '<think>{"draft": 0}</think> {"final": 1}'

# what each reading makes of each reply, worked by hand from the module docstring (None: refused)
EXPECTED = {
    # TWO: the first-to-last brace span is not one object; LIST: its span is
    "userrl": {
        FENCED: {"a": 1},
        PYTHON: {"judgment": "No", "ok": True},
        TWO: None,
        LIST: {"a": 1},
        THINK: {"final": 1},
    },
    "largest": {  # THINK: two objects of one size, the first (the draft inside <think>) is kept
        FENCED: {"b": {"c": 2, "d": 3}},
        PYTHON: None,
        TWO: {"y": 22, "z": 333},
        LIST: None,
        THINK: {"draft": 0},
    },
    "outermost": {FENCED: None, PYTHON: None, TWO: None, LIST: {"a": 1}, THINK: None},
    "first": {FENCED: {"a": 1}, PYTHON: None, TWO: {"x": 1}, LIST: {"a": 1}, THINK: {"draft": 0}},
}


@pytest.mark.parametrize("read", sorted(EXPECTED))
@pytest.mark.parametrize("reply", [FENCED, PYTHON, TWO, LIST, THINK], ids=["fenced", "python", "two", "list", "think"])
def test_each_reading_on_the_same_replies(read, reply):
    expected = EXPECTED[read][reply]
    if expected is None:
        with pytest.raises(ValueError):
            reply_json_object(reply, read=read)
    else:
        assert reply_json_object(reply, read=read) == expected


def test_a_refusal_raises_the_callers_failure_with_the_replys_name():
    with pytest.raises(JudgeFailure, match=r"^Turing rating: no JSON object in the judge reply: 'no'$"):
        reply_json_object("no", read="first", error=JudgeFailure, what="Turing rating")
    with pytest.raises(RetryableError, match="judge reply is not a JSON object"):
        reply_json_object("nothing", read="userrl", error=RetryableError)
    with pytest.raises(ValueError, match="reply is a JSON list, not an object"):
        reply_json_object(LIST, read="largest")
    with pytest.raises(ValueError, match="read must be one of"):
        reply_json_object("{}", read="lenient")  # type: ignore[arg-type]
