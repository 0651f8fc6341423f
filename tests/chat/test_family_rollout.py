"""Token-in/token-out rollouts under each family's training template: the policy writes the family's
own tool-call format, the gym reads it, and the trajectory is exactly the template's render of the
conversation with the SFT mask equal to the response mask."""

from __future__ import annotations

import asyncio
import copy

import pytest

from mimesis_pl.chat import ChatRenderer, use_chat_template
from mimesis_pl.envs import EnvironmentManager, interact_tool_schema
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.users.scripted import ScriptedUser

from ..rollout.rollout_fixtures import ScriptedEngine, telepathy_row
from .families import family_tokenizer

FAMILIES = [
    ("qwen3", {}, "qwen"),
    ("qwen3", {"enable_thinking": False}, "qwen"),
    ("qwen3_5", {}, "qwen"),
    ("qwen3_5", {"enable_thinking": False}, "qwen"),
    ("qwen2_5", {}, "qwen"),
    ("llama3", {}, "llama"),
    ("qwen3_5", {}, "qwen-nn"),
]


def policy_text(renderer: ChatRenderer, choice: str, content: str) -> str:
    """What the policy generates for one action: the template's own rendering of the structured call."""
    history = [{"role": "user", "content": "x"}]
    call = {
        "type": "function",
        "function": {"name": "interact_with_env", "arguments": {"choice": choice, "content": content}},
    }
    turn = renderer.render_text([*history, {"role": "assistant", "content": "", "tool_calls": [call]}])
    body = turn[len(renderer.render_text(history, add_generation_prompt=True)) :]
    return body[: body.rindex(renderer.eot_token)]


@pytest.mark.parametrize(
    ("template", "variables", "kind"),
    FAMILIES,
    ids=[
        "qwen3-think",
        "qwen3-nothink",
        "qwen3.5-think",
        "qwen3.5-nothink",
        "qwen2.5",
        "llama3",
        "qwen3.5-think-newline-merges",
    ],
)
def test_family_rollout_is_token_exact_and_parses_its_tool_calls(tiny_tokenizer, template, variables, kind):
    tok = use_chat_template(family_tokenizer(copy.deepcopy(tiny_tokenizer), kind), template)
    renderer = ChatRenderer(tok, tools=[interact_tool_schema(("action", "answer"))], **variables)
    texts = [policy_text(renderer, "action", "Is it a fruit?"), policy_text(renderer, "answer", "Kiwi")]
    engine = ScriptedEngine(tok, texts)
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=8)
    loop = MultiTurnRollout(
        engine, tok, manager, SamplingParams(max_new_tokens=256), max_length=8192, template_kwargs=variables
    )
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))

    assert traj.status == "finished" and traj.turn_rewards == [0.0, 1.0]  # both calls were read by the gym
    assert traj.counters.get("tool_errors", 0) == 0 and traj.counters["action/action"] == 1
    full = renderer.render(traj.messages)
    assert full.input_ids[: len(traj.input_ids)] == traj.input_ids
    assert full.loss_mask[: len(traj.input_ids)] == traj.response_mask
    if kind == "qwen-nn":  # the turn starts with the lone "\n" the model generates after "<think>\n"
        start = traj.turn_spans[0].start
        assert tok.convert_ids_to_tokens(traj.input_ids[start - 1 : start + 2]) == ["Ċ", "Ċ", "</think>"]
        assert "\n\n" in tok.convert_ids_to_tokens(tok("<think>\n\n</think>", add_special_tokens=False)["input_ids"])
