"""Issue 33, items 1 and 7: the text a judge or partner sees, and the format gate, as the reference computes them.

The reference's rule, restated here from its behaviour (``AgentContext.clean_response`` and ``think_stats``):
with thinking off, every reasoning block is removed; with thinking on, the one well-formed block (lower-case
tags, one close, at most one opener that starts the text) is cut off, a reply with no lower-case tag at all is
read whole without its reasoning, and any other tagged shape gives "".
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.think_format import GeneratedTurn, check_think_format, clean_response, gated_reward

DATA = Path(__file__).resolve().parents[2] / "assets/data/simulator_rl"


def ref_scrub(text: str) -> str:
    """Every reasoning shape removed (complete pairs, a leading close, an unclosed opener), then stripped."""
    for o, c in (("<seed:think>", "</seed:think>"), ("<think>", "</think>")):
        text = re.sub(re.escape(o) + ".*?" + re.escape(c), "", text, flags=re.S)
    for c in ("</seed:think>", "</think>"):
        text = re.sub("^.*?" + re.escape(c), "", text, count=1, flags=re.S)
    for o in ("<seed:think>", "<think>"):
        text = re.sub(re.escape(o) + ".*$", "", text, flags=re.S)
    return text.strip()


def ref_strict(text: str) -> tuple[str | None, str]:
    for o, c in (("<think>", "</think>"), ("<seed:think>", "</seed:think>")):
        if c not in text:
            continue
        if text.count(c) != 1 or text.count(o) > 1 or (o in text and not text.lstrip().startswith(o)):
            return None, ""
        before, after = text.split(c)
        return before.replace(o, "", 1).strip(), after.strip()
    return None, ""


def ref_clean(text: str, thinking: bool) -> str:
    if not thinking:
        return ref_scrub(text)
    reasoning, answer = ref_strict(text)
    tagged = any(t in text for t in ("<think>", "</think>", "<seed:think>", "</seed:think>"))
    return ref_scrub(text) if reasoning is None and not tagged else answer


CASES = [
    "Sure, I can pay on Friday.",  # an API model: its reasoning never arrives in-band
    "<think>plan it</think>\n\nSure.",
    "plan it</think>Sure.",  # pre-filled opener
    "<think>plan it, cut by the cap",
    "<think>a</think>b<think>c</think>d",
    "x <think>a</think> y",
    "<seed:think>r</seed:think> ok",
    "",
]


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("thinking", [True, False])
def test_cleaning_equals_the_reference(text, thinking):
    assert clean_response(text, thinking) == ref_clean(text, thinking)


def words(text: str) -> int:
    return len(text.split())


def test_upper_case_think_tags_fail_the_training_gate_as_in_the_reference():
    turn = GeneratedTurn("<THINK>one two three four</THINK>\n\nhello", truncated=False)
    check = check_think_format([turn], True, words)
    assert not check.correct and gated_reward(1.0, check, is_train=True) == 0.0  # the reference: 0 (was 1)
    lower = GeneratedTurn("<think>one two three four</think>\n\nhello", truncated=False)
    assert check_think_format([lower], True, words).correct
    # with thinking off the reference's check is case-sensitive too: an upper-case opener is no think block
    assert check_think_format([GeneratedTurn("<THINK>x</THINK> hi", False)], False, words).correct
    # what a judge is shown keeps our any-case scrub: reasoning never reaches it (S79)
    assert clean_response("<THINK>secret</THINK> hi", True) == "hi"


def sample_rows() -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for split in ("val", "train"):
        for line in (DATA / f"{split}.jsonl").read_text().splitlines():
            row = json.loads(line)
            rows.setdefault(row["data_source"], row)
    return rows


PLAIN = "<response>Message: hmm ok, so what would you suggest for the rent then?</response>"
FAMILIES = ("humanual-chat", "mirrorbench", "sim_arena_math", "sotopia", "usersim-behavior", "userllm", "coser")


@pytest.mark.parametrize("key", FAMILIES)
def test_a_plain_text_simulator_scores_the_same_with_thinking_on_and_off(tiny_tokenizer, key):
    """An API simulator (no think tags) in evaluation: thinking on must not zero it (it did, item 1)."""
    row = sample_rows()[key]
    scores = {}
    for thinking in (True, False):
        ctx = make_context(tiny_tokenizer, lambda p, k: PLAIN, is_train=False, enable_think=thinking, max_new_tokens=96)
        result = asyncio.run(get_task(key).run(row, ctx, group_id="g", gen_uid="0"))
        assert result.status == "ok", (key, thinking, result.status, result.error)
        scores[thinking] = result.score
    assert scores[True] == pytest.approx(scores[False]) and scores[True] > 0, (key, scores)


@pytest.mark.parametrize("thinking", [True, False])
def test_an_untagged_humanual_reply_is_judged_whole_and_not_halved(tiny_tokenizer, thinking):
    """The reference shows the judge the whole cleaned reply when ``<response>`` is missing and keeps its score;
    ``untagged_factor: 0.5`` is our earlier halving, kept as a named option (S80)."""
    row = sample_rows()["humanual-chat"]
    tagged, untagged = PLAIN, "hmm ok, so what would you suggest for the rent then?"
    scores = {}
    for name, reply, options in (
        ("tagged", tagged, {}),
        ("untagged", untagged, {}),
        ("halved", untagged, {"humanual-chat": {"untagged_factor": 0.5}}),
    ):
        ctx = make_context(tiny_tokenizer, lambda p, k, r=reply: r, is_train=False, enable_think=thinking)
        ctx.options = options
        result = asyncio.run(get_task("humanual-chat").run(row, ctx, group_id="g", gen_uid="0"))
        assert result.status == "ok", (name, result.error)
        scores[name] = result.score
    assert scores["untagged"] == pytest.approx(scores["tagged"]) and scores["tagged"] > 0
    assert scores["halved"] == pytest.approx(scores["tagged"] / 2)
