"""The real ``openai`` client against ``mimesis-pl serve`` on the tiny export (loopback, in a thread)."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request

import openai
import pytest
import torch
from safetensors.torch import load_file, save_file

from mimesis_pl.serve import ServeSettings, revision_of, start_in_background

from .conftest import TINY, scripted_server

USER = [{"role": "user", "content": "Hello, who are you?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "interact_with_env",
            "description": "Talk to the environment.",
            "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
        },
    }
]


def thinking(on: bool | None) -> dict:
    return {"chat_template_kwargs": {"enable_thinking": on}}


def test_chat_answers_with_usage_and_finish_reason(client, server):
    reply = client.chat.completions.create(model=server.model_name, messages=USER, max_tokens=6, temperature=0)
    choice = reply.choices[0]
    assert reply.object == "chat.completion" and reply.model == server.model_name
    assert choice.finish_reason in ("stop", "length") and isinstance(choice.message.content, str)
    assert reply.usage.completion_tokens <= 6
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_thinking_on_and_off_render_different_prompts(client, server):
    def prompt_tokens(on: bool) -> int:
        reply = client.chat.completions.create(
            model=server.model_name, messages=USER, max_tokens=1, temperature=0, extra_body=thinking(on)
        )
        return reply.usage.prompt_tokens

    # chatml: thinking on pre-fills "<think>" (1 token), off an empty block "<think>\n\n</think>\n\n".
    assert prompt_tokens(False) > prompt_tokens(True)


def test_thinking_off_returns_the_text_as_content(client, server):
    reply = client.chat.completions.create(
        model=server.model_name, messages=USER, max_tokens=8, temperature=0, extra_body=thinking(False)
    )
    message = reply.choices[0].message
    assert getattr(message, "reasoning_content", None) is None


def test_an_unclosed_prefilled_think_is_all_reasoning_never_content(client, server):
    # Thinking on pre-fills "<think>"; 4 tokens of the tiny model never close it: all of it is reasoning.
    reply = client.chat.completions.create(
        model=server.model_name, messages=USER, max_tokens=4, temperature=0, extra_body=thinking(True)
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == ""
    assert choice.message.reasoning_content  # the continuation, stripped
    assert "</think>" not in choice.message.reasoning_content


def test_the_unclosed_case_with_a_scripted_continuation():
    secret = "The secret word is Paris, I must not say it. Let me think"
    running, _ = scripted_server(secret, finish="length", enable_thinking=True)
    with running:
        client = openai.OpenAI(base_url=running.url, api_key="unused", max_retries=0)
        message = client.chat.completions.create(model=running.model_name, messages=USER, max_tokens=50).choices[0]
        assert message.message.content == "" and message.message.reasoning_content == secret
        closed = client.chat.completions.create(
            model=running.model_name, messages=USER, extra_body=thinking(False), max_tokens=50
        ).choices[0]
        assert closed.message.content == secret  # thinking off: the prompt closed the block, the text is public


def test_seeded_repeats_are_identical_and_n_choices_are_seeded_apart(client, server):
    def sample(seed: int, n: int = 1) -> list[str]:
        reply = client.chat.completions.create(
            model=server.model_name, messages=USER, max_tokens=12, temperature=1.0, seed=seed, n=n
        )
        return [c.message.content for c in reply.choices]

    assert sample(7) == sample(7)
    three = sample(7, n=3)
    assert len(three) == 3 and three[0] == sample(7)[0] and three[1] == sample(8)[0]
    assert len(set(three)) > 1


def test_sixteen_concurrent_requests_are_all_answered_in_batches(server):
    async def ask_all() -> list:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
        asks = [
            client.chat.completions.create(
                model=server.model_name,
                messages=[{"role": "user", "content": f"question {i}"}],
                max_tokens=8,
                temperature=0,
            )
            for i in range(16)
        ]
        try:
            return await asyncio.gather(*asks)
        finally:
            await client.close()

    before = server.served.engine.batches_run
    replies = asyncio.run(ask_all())
    assert len(replies) == 16 and all(r.choices[0].message.content is not None for r in replies)
    assert server.served.engine.batches_run - before < 16


def test_ignore_eos_generates_exactly_max_tokens(client, server):
    reply = client.chat.completions.create(
        model=server.model_name, messages=USER, max_tokens=20, temperature=0, extra_body={"ignore_eos": True}
    )
    assert reply.usage.completion_tokens == 20 and reply.choices[0].finish_reason == "length"


def test_a_stop_string_cuts_the_text_and_finishes_on_stop(client, server):
    full = client.chat.completions.create(model=server.model_name, messages=USER, max_tokens=12, temperature=0)
    text = full.choices[0].message.content
    stop = text[3:6]
    assert stop.strip() and stop in text
    cut = client.chat.completions.create(
        model=server.model_name, messages=USER, max_tokens=12, temperature=0, stop=[stop]
    )
    assert cut.choices[0].message.content == text[: text.index(stop)].strip()
    assert cut.choices[0].finish_reason == "stop"
    assert cut.usage.completion_tokens <= full.usage.completion_tokens


def test_tools_are_rendered_into_the_prompt(client, server):
    plain = client.chat.completions.create(model=server.model_name, messages=USER, max_tokens=1, temperature=0)
    offered = client.chat.completions.create(
        model=server.model_name, messages=USER, max_tokens=1, temperature=0, tools=TOOLS
    )
    tool_text = server.served.tokenizer.encode(json.dumps(TOOLS[0]), add_special_tokens=False)
    assert offered.usage.prompt_tokens - plain.usage.prompt_tokens >= len(tool_text)


def test_a_scripted_tool_call_comes_back_as_tool_calls():
    call = '<tool_call>\n{"name": "interact_with_env", "arguments": {"content": "Is it alive?"}}\n</tool_call>'
    running, engine = scripted_server("</think>\n\n" + call, enable_thinking=True)
    with running:
        client = openai.OpenAI(base_url=running.url, api_key="unused", max_retries=0)
        history = USER + [
            {"role": "assistant", "content": "Sure.", "reasoning_content": "They ask who I am."},
            {"role": "user", "content": "Ask the environment."},
        ]
        reply = client.chat.completions.create(model=running.model_name, messages=history, tools=TOOLS)
        choice = reply.choices[0]
        assert choice.finish_reason == "tool_calls"
        (tool_call,) = choice.message.tool_calls
        assert tool_call.function.name == "interact_with_env"
        assert json.loads(tool_call.function.arguments) == {"content": "Is it alive?"}
        # The history's reasoning and the tools reached the template.
        prompt = running.served.tokenizer.decode(engine.prompts[-1])
        assert "They ask who I am." in prompt and '"name": "interact_with_env"' in prompt
        follow_up = history + [
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": tool_call.id, "content": "yes"},
        ]
        assert client.chat.completions.create(model=running.model_name, messages=follow_up, tools=TOOLS).choices


@pytest.mark.parametrize(
    ("kwargs", "status", "param"),
    [
        ({"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role"),
        ({"temperature": "hot"}, 400, "temperature"),
        ({"max_tokens": 0}, 400, "max_tokens"),
        ({"n": 0}, 400, "n"),
        ({"seed": "x"}, 400, "seed"),
        ({"stream": True}, 400, "stream"),
        ({"model": "other"}, 404, "model"),
        ({"max_tokens": 300}, 400, "max_tokens"),  # prompt + 300 > max_model_len 256
        ({"messages": [{"role": "user", "content": "word " * 400}]}, 400, "messages"),  # prompt over the context
    ],
)
def test_bad_requests_get_a_4xx_naming_the_field(client, server, kwargs, status, param):
    body = {"model": server.model_name, "messages": USER, "max_tokens": 2, **kwargs}
    error = openai.NotFoundError if status == 404 else openai.BadRequestError
    with pytest.raises(error) as caught:
        client.chat.completions.create(**body)
    assert caught.value.status_code == status
    assert caught.value.body["param"] == param
    assert param.split(".")[0].split("[")[0] in caught.value.body["message"]


def test_invalid_json_is_a_400(server):
    request = urllib.request.Request(server.url + "/chat/completions", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert "not valid JSON" in json.loads(caught.value.read())["error"]["message"]


def test_models_reports_name_root_revision_and_length(client, server):
    (entry,) = client.models.list().data
    assert entry.id == server.model_name and entry.owned_by == "mimesis-pl"
    extra = entry.model_extra
    assert extra["root"] == str(TINY) and extra["max_model_len"] == 256
    assert extra["revision"] == server.revision == revision_of(TINY)


def test_the_revision_changes_when_a_weight_file_changes(tmp_path):
    folder = tmp_path / "sim" / "final"
    shutil.copytree(TINY, folder)
    before = revision_of(folder)
    assert before.startswith("sha256:") and len(before) == len("sha256:") + 16
    weights = load_file(folder / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + torch.ones_like(weights[name]) * 1e-3
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with start_in_background(ServeSettings(model_dir=str(folder), port=0)) as running:
        assert running.model_name == "sim-final"
        (entry,) = openai.OpenAI(base_url=running.url, api_key="unused").models.list().data
        assert entry.model_extra["revision"] == running.revision == revision_of(folder) != before


def test_a_token_is_required_on_every_route_when_set(monkeypatch):
    monkeypatch.setenv("MIMESIS_SERVE_TEST_TOKEN", "s3cret")
    settings = ServeSettings(model_dir=str(TINY), port=0, token_env="MIMESIS_SERVE_TEST_TOKEN")
    with start_in_background(settings) as running:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=running.url, api_key="wrong", max_retries=0).models.list()
        root = running.url.removesuffix("/v1")
        for path in ("/v1/models", "/health"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(root + path, timeout=10)
            assert caught.value.code == 401
        good = openai.OpenAI(base_url=running.url, api_key="s3cret", max_retries=0)
        assert good.chat.completions.create(model=running.model_name, messages=USER, max_tokens=2).choices


def test_a_public_bind_without_a_token_is_refused():
    with pytest.raises(ValueError, match="without a token"):
        start_in_background(ServeSettings(model_dir=str(TINY), host="0.0.0.0", port=0))
