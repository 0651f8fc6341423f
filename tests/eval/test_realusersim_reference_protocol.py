"""Issue 33, items 4 and 9: RealUserSim's judge input and aggregation are the reference's.

The reference (``realusersim_eval.py``), restated: the judge's user message is "Here are the user's messages from
two conversations:" then each side's user turns as ``{role, content}`` objects, ``json.dumps(indent=2)``; the
formatting call is system = the formatting prompt (plus a retry note), user = the raw judgment; the prompts file is
split at its headers, each header's ``=====`` underline dropped; the verdict is the span from the first ``{`` to the
last ``}`` parsed as one object; close % and mean user turns are over the judged cases, every seed pooled; the
cluster bootstrap groups users in order of first appearance.
"""

from __future__ import annotations

import asyncio
import collections
import json

import numpy as np
import pytest

from mimesis_pl.eval.simulator.realusersim.data import JudgePrompts, load_judge_prompts
from mimesis_pl.eval.simulator.realusersim.protocol import judge_comparison, judge_fidelity
from mimesis_pl.eval.simulator.realusersim.scoring import condition_summary
from mimesis_pl.eval.simulator.text import FIDELITY_KEYS, parse_fidelity_verdict
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import ScriptedChatSettings
from mimesis_pl.metrics.fidelity import cluster_bootstrap_ci

VERDICT = json.dumps({k: {"is_matched": i % 2 == 0} for i, k in enumerate(FIDELITY_KEYS)})


def test_the_judge_sees_the_references_user_message():
    real, sim = ["hi, my order is late", "ok thx"], ["héllo, where is my order"]
    want = (
        "Here are the user's messages from two conversations:\n"
        f"CONVERSATION 1 (USER1's messages):\n{json.dumps([{'role': 'user', 'content': t} for t in real], indent=2)}"
        f"\n\nCONVERSATION 2 (USER2's messages):\n{json.dumps([{'role': 'user', 'content': t} for t in sim], indent=2)}"
    )
    assert judge_comparison(real, sim) == want


class Recording:
    name, revision = "judge", "r"

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []

    async def complete(self, messages, *, temperature, max_tokens, seed=None):
        self.calls.append([dict(m) for m in messages])
        return self.replies.pop(0)


def test_the_formatting_call_is_system_prompt_then_the_judgment():
    judge = Recording(["free-text judgment", "not json", VERDICT])
    prompts = JudgePrompts(system="SYS", formatting="FMT")
    hits, judgment = asyncio.run(judge_fidelity(["a"], ["b"], prompts, judge, ScriptedChatSettings(max_tokens=64)))
    assert hits == (1, 0, 1, 0, 1) and judgment == "free-text judgment"
    assert judge.calls[0] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": judge_comparison(["a"], ["b"])},
    ]
    assert judge.calls[1] == [{"role": "system", "content": "FMT"}, {"role": "user", "content": "free-text judgment"}]
    assert judge.calls[2][0]["content"] == "FMT\n\nReturn ONLY the JSON object, no prose."
    assert judge.calls[2][1] == {"role": "user", "content": "free-text judgment"}


def test_a_prompts_file_in_the_references_layout_loses_its_underlines(tmp_path):
    text = (
        "SYSTEM PROMPT\n=============\nYou are a forensic linguist.\nJudge both.\n\n"
        "FORMATTING PROMPT (applied to raw judge output)\n" + "=" * 47 + "\nReturn JSON.\n"
    )
    path = tmp_path / "judge_prompt.txt"
    path.write_text(text)
    ref_system = text.split("FORMATTING PROMPT")[0].strip().replace("SYSTEM PROMPT\n=============\n", "")
    ref_fmt = text.split("FORMATTING PROMPT (applied to raw judge output)\n" + "=" * 47 + "\n")[1].strip()
    prompts = load_judge_prompts(path)
    assert (prompts.system, prompts.formatting) == (ref_system, ref_fmt)


@pytest.mark.parametrize(
    "reply, ok",
    [
        (VERDICT, True),
        ("```json\n" + VERDICT + "\n```", True),
        ("Here you go: " + VERDICT + " Done.", True),  # prose without braces around one object
        ("Note {draft}: " + VERDICT, False),  # braces in the prose: the outer span is not one object
        (VERDICT + "\n" + VERDICT, False),  # two objects
    ],
)
def test_the_verdict_is_read_as_strictly_as_the_reference(reply, ok):
    if ok:
        assert parse_fidelity_verdict(reply) == (1, 0, 1, 0, 1)
    else:
        with pytest.raises(JudgeFailure):
            parse_fidelity_verdict(reply)


def test_close_rate_and_user_turns_count_judged_cases_only():
    # 5 cases, one seed; the judge failed on case 4 (closed, 2 turns): the reference drops it before aggregating
    rows = [
        {"seed": 0, "user_ip": "u1", "hits": [1] * 5, "termination_reason": "close_token", "n_user_messages": 3},
        {"seed": 0, "user_ip": "u2", "hits": [0] * 5, "termination_reason": "max_turns", "n_user_messages": 5},
        {"seed": 0, "user_ip": "u3", "hits": [1, 0, 0, 0, 0], "termination_reason": "max_turns", "n_user_messages": 5},
        {"seed": 0, "user_ip": "u4", "hits": None, "termination_reason": "close_token", "n_user_messages": 2},
        {"seed": 0, "user_ip": "u5", "hits": [1, 1, 0, 0, 0], "termination_reason": "max_turns", "n_user_messages": 4},
    ]
    for r in rows:
        r["error"] = None if r["hits"] else "judge: unparseable"
    summary = condition_summary(rows, [0], n_boot=20, bootstrap_seed=1)
    assert summary["close_rate"]["mean"] == pytest.approx(25.0)  # 1 of 4 judged (was 2 of 5 = 40)
    assert summary["mean_user_turns"]["mean"] == pytest.approx(17 / 4)  # 4.25 (was 19 / 5 = 3.8)


def ref_cluster_bootstrap(hits, users, n_boot, seed):
    groups = collections.defaultdict(list)
    for h, u in zip(hits, users):
        groups[u].append(h)
    keys = list(groups)
    flat = np.array([np.array(groups[k]).sum() for k in keys], float)
    tot = np.array([len(groups[k]) * 5 for k in keys], float)
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    est = flat[idx].sum(1) / np.maximum(tot[idx].sum(1), 1)
    return float(np.percentile(est, 2.5)) * 100, float(np.percentile(est, 97.5)) * 100


def test_cluster_bootstrap_groups_users_in_first_appearance_order():
    rng = np.random.default_rng(0)
    users = ["zed", "amy", "zed", "bob", "amy", "cat", "dan", "bob", "eve", "fay"]
    hits = rng.integers(0, 2, size=(len(users), 5)).tolist()
    assert cluster_bootstrap_ci(hits, users, 500, 1234) == pytest.approx(ref_cluster_bootstrap(hits, users, 500, 1234))
