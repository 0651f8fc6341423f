"""EngineChatAgent: an in-process engine as the replay agent — one engine call per request."""

from __future__ import annotations

import asyncio

import pytest
from eval_episode_fixtures import ScriptedTokenEngine

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.eval import RetryPolicy
from mimesis_pl.eval.replay import EngineChatAgent, ReplayExecutor, load_cases, project, request_messages
from mimesis_pl.rollout.engines import HFEngine, OpenAIEngineError


class CountingEngine:
    """Wraps an engine and records the prompt of every ``generate`` call."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.prompts: list[list[int]] = []

    async def generate(self, prompt_ids, params):
        self.prompts.append(list(prompt_ids))
        return await self.engine.generate(prompt_ids, params)


def test_one_engine_call_per_request_with_the_tiny_model(tiny_model_path, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    plans = [project(case) for case in load_cases("assets/replay")]
    requests = [r for p in plans for r in p.requests]
    hf = HFEngine(AutoModelForCausalLM.from_pretrained(tiny_model_path), tiny_tokenizer)
    engine = CountingEngine(hf)
    agent = EngineChatAgent(engine, tiny_tokenizer, max_new_tokens=8)
    try:
        run = asyncio.run(ReplayExecutor(agent, max_concurrency=8).run(plans))
    finally:
        hf.close()
    assert len(engine.prompts) == agent.calls == len(requests) == len(run.records)
    assert all(r.agent_calls == 1 and r.decision is not None for r in run.records)
    # each call received exactly its request, rendered with the agent's own template and tools
    assert sorted(map(tuple, engine.prompts)) == sorted(tuple(agent.prompt_ids(r)) for r in requests)
    assert all(r.status == "scored" or r.failure == "unjudged" for r in run.records)


def test_rendering_and_decision_parsing(tiny_tokenizer):
    (plan,) = [project(c) for c in load_cases("assets/replay/weather.yaml")]
    (request,) = plan.requests
    call = (
        "<think>the user wants weather</think>\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>'
    )
    engine = ScriptedTokenEngine(tiny_tokenizer, policy=lambda prompt: call)
    agent = EngineChatAgent(engine, tiny_tokenizer, max_new_tokens=64)
    decision = asyncio.run(agent.decide(request))
    assert [(c.name, c.arguments) for c in decision.tool_calls] == [("get_weather", {"city": "Berlin"})]
    assert decision.reasoning == "the user wants weather" and decision.parse_error is None

    (prompt,) = engine.prompts
    tools = request.to_openai()["tools"]
    expected = ChatRenderer(tiny_tokenizer, tools=tools).prompt_ids(request_messages(request, "system"))
    assert prompt == expected
    text = tiny_tokenizer.decode(prompt, skip_special_tokens=False)
    assert '"get_weather"' in text and "Request context (JSON)" in text
    assert "metric" not in text.split("</tools>")[1]  # the expectation (units: metric) never reaches the agent


def test_served_engine_failures_are_transport_failures(tiny_tokenizer):
    class DownEngine:
        async def generate(self, prompt_ids, params):
            raise OpenAIEngineError("cannot reach http://127.0.0.1:1/v1/completions")

    (plan,) = [project(c) for c in load_cases("assets/replay/weather.yaml")]
    agent = EngineChatAgent(DownEngine(), tiny_tokenizer)
    run = asyncio.run(ReplayExecutor(agent, retry=RetryPolicy(max_attempts=2, backoff_s=0)).run([plan]))
    (record,) = run.records
    assert (record.status, record.failure, record.agent_calls, agent.calls) == ("unscored", "agent_transport", 2, 2)
    with pytest.raises(ValueError, match="max_prompt_tokens=5"):
        EngineChatAgent(DownEngine(), tiny_tokenizer, max_prompt_tokens=5).prompt_ids(plan.requests[0])
