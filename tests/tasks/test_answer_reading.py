"""Issue 33, items 6 and 10: the letter families read the answer with the reference's own pattern search, and
HumanLLM takes any non-empty candidate list.

The reference, restated: HiToM searches ``<answer>\\s*([A-Z])\\s*</answer>`` (any case), the ABCD families
``<answer>\\s*([ABCD])\\s*</answer>`` (any case), AlignX ``<answer>\\s*([AB])\\s*</answer>`` (case-sensitive) and
HumanLLM ``<answer>([A-T](?:,[A-T]){4})</answer>`` (case-sensitive, no spaces): the first place the whole pattern
matches, wherever it is. HumanLLM needs only a non-empty candidate list.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task


def ref_read(text: str, body: str, ignore_case: bool) -> str | None:
    m = re.search(f"<answer>{body}</answer>", text, re.IGNORECASE if ignore_case else 0)
    return m.group(1) if m else None


READERS = {
    "hitom": (r"\s*([A-Z])\s*", True),
    "mistakes": (r"\s*([ABCD])\s*", True),
    "alignx_demo": (r"\s*([AB])\s*", False),
    "humanllm": (r"([A-T](?:,[A-T]){4})", False),
}
REPLIES = [
    "<answer>I would say B</answer> <answer>B</answer>",  # 0 on our first-tag reading, 1 by the reference's
    "<answer>b</answer>",
    "<ANSWER>A</ANSWER>",  # the reference's AlignX tag is case-sensitive
    "<answer> A </answer>",
    "<answer>C, A,M,B,K</answer> <answer>C,A,M,B,K</answer>",  # a space inside HumanLLM's tag breaks it
    "<answer>c,a,m,b,k</answer>",
    "no tag: B",
]


@pytest.mark.parametrize("key", sorted(READERS))
@pytest.mark.parametrize("reply", REPLIES)
def test_the_read_answer_is_the_references(key, reply):
    body, ignore_case = READERS[key]
    got = get_task(key).read(reply)
    want = ref_read(reply, body, ignore_case)
    assert (got.upper() if got and ignore_case else got) == (want.upper() if want and ignore_case else want)


def _score(tiny_tokenizer, key: str, row: dict, reply: str) -> float:
    ctx = make_context(tiny_tokenizer, lambda p, k: "\nthinking it through here\n</think>\n\n" + reply, is_train=False)
    result = asyncio.run(get_task(key).run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    return result.score


def test_a_later_well_formed_tag_is_scored(tiny_tokenizer):
    row = reference_row("mistakes")
    gold = get_task("mistakes").parse_row(row)  # checks the row
    assert gold is not None
    letters = "ABCD"
    scores = {x: _score(tiny_tokenizer, "mistakes", row, f"<answer>I would say {x}</answer> <answer>{x}</answer>")
              for x in letters}  # fmt: skip
    assert sorted(scores.values()) == [0.0, 0.0, 0.0, 1.0]  # exactly the gold letter scores, read from the 2nd tag


def test_humanllm_takes_four_candidates(tiny_tokenizer):
    row = reference_row("humanllm")
    row["extra_info"]["candidates"] = ["a", "b", "c", "d"]
    row["extra_info"]["answer_index"] = 1
    get_task("humanllm").parse_row(row)  # no row error (was: "must hold 5-20 items")
    assert _score(tiny_tokenizer, "humanllm", row, "<answer>A,B,C,D,E</answer>") == 0.0  # E is past the 4
