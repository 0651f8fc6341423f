"""Request validation of ``mimesis-pl serve``: every refusal names its field; the served name and defaults."""

from __future__ import annotations

import pytest

from mimesis_pl.chat.serving import default_served_name
from mimesis_pl.serve import BadRequest, ServeSettings, parse_request
from mimesis_pl.serve.command import build_parser, settings_from_args, vllm_command

from .conftest import TINY

USER = [{"role": "user", "content": "hi"}]


def parse(**body):
    return parse_request({"messages": USER, **body}, model_name="sim", default_thinking=None)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content"),
        ({"temperature": "hot"}, "temperature"),
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": 0}, "top_k"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"max_completion_tokens": "9"}, "max_completion_tokens"),
        ({"n": 0}, "n"),
        ({"seed": "7"}, "seed"),
        ({"seed": True}, "seed"),
        ({"stop": 5}, "stop"),
        ({"stream": True}, "stream"),
        ({"ignore_eos": 1}, "ignore_eos"),
        ({"logprobs": True}, "logprobs"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [{"type": "function"}]}, "tools[0]"),
        ({"chat_template_kwargs": {"enable_thinking": "yes"}}, "chat_template_kwargs.enable_thinking"),
    ],
)
def test_a_bad_field_is_a_400_naming_it(body, param):
    with pytest.raises(BadRequest) as caught:
        parse_request({"messages": USER, **body}, model_name="sim", default_thinking=None)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert param.split(".")[0].split("[")[0] in caught.value.message


def test_another_model_name_is_a_404_as_vllm_answers():
    with pytest.raises(BadRequest) as caught:
        parse(model="other")
    assert (caught.value.status, caught.value.param) == (404, "model")


def test_defaults_and_accepted_fields():
    request = parse()
    assert (request.temperature, request.top_p, request.top_k, request.max_tokens, request.n) == (1.0, 1.0, -1, None, 1)
    assert request.template_kwargs == {} and request.tools is None and request.stop == ()
    request = parse(max_tokens=5, max_completion_tokens=9, stop="x", seed=3, n=2, stream=False)
    assert (request.max_tokens, request.stop, request.seed, request.n) == (9, ("x",), 3, 2)


def test_thinking_default_is_the_servers_unless_the_request_sets_it():
    assert parse_request({"messages": USER}, model_name="m", default_thinking=True).template_kwargs == {
        "enable_thinking": True
    }
    body = {"messages": USER, "chat_template_kwargs": {"enable_thinking": False, "x": 1}}
    assert parse_request(body, model_name="m", default_thinking=True).template_kwargs == {
        "enable_thinking": False,
        "x": 1,
    }


def test_tool_choice_none_leaves_the_tools_out():
    tools = [{"type": "function", "function": {"name": "ask", "parameters": {}}}]
    assert parse(tools=tools).tools == tools
    assert parse(tools=tools, tool_choice="none").tools is None


def test_history_keeps_reasoning_and_text_parts():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "hi", "reasoning_content": "plan"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "ok", "tool_call_id": "c"},
    ]
    parsed = parse_request({"messages": messages}, model_name="m", default_thinking=None).messages
    assert parsed[0]["content"] == "ab" and parsed[1]["reasoning_content"] == "plan"


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("runs/sim_rl/version_0/hf/final", "sim_rl-final"),
        ("runs/sim_rl/version_0/hf/best", "sim_rl-best"),
        ("exports/simulator/final", "simulator-final"),
        ("models/my-sim", "my-sim"),
    ],
)
def test_the_default_served_name_is_never_a_bare_final(tmp_path, relative, expected):
    folder = tmp_path / relative
    folder.mkdir(parents=True)
    assert default_served_name(folder) == expected


def test_settings_name_the_bad_field(tmp_path):
    with pytest.raises(ValueError, match="no config.json"):
        ServeSettings(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="device"):
        ServeSettings(model_dir=str(TINY), device="tpu")
    with pytest.raises(ValueError, match="max_batch_size"):
        ServeSettings(model_dir=str(TINY), max_batch_size=0)
    assert ServeSettings(model_dir=str(TINY)).model_name == "tiny-qwen3"


def test_the_vllm_route_serves_the_exports_template_thinking_and_name():
    args = build_parser().parse_args(
        [str(TINY), "--engine", "vllm", "--enable-thinking", "true", "--port", "8123", "--dtype", "bfloat16"]
    )
    command = vllm_command(settings_from_args(args))
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]

    def flag(name: str) -> str:
        return command[command.index(name) + 1]

    assert flag("--served-model-name") == "tiny-qwen3"
    assert flag("--chat-template") == str(TINY / "chat_template.jinja")
    assert flag("--default-chat-template-kwargs") == '{"enable_thinking": true}'
    assert "--reasoning-parser" in command and "--tool-call-parser" in command
    assert command[command.index("--dtype") + 1] == "bfloat16" and "8123" in command
