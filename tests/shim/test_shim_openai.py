"""The real ``openai`` client against the shim in front of the scripted upstream."""

from __future__ import annotations

import json
import urllib.request

import openai
import pytest
from shim_scripted_upstream import directive

from mimesis_pl.shim import ShimClient

REASONING_MODES = ["inline", "prefilled", "truncated", "two_blocks", "reasoning_content", "reasoning"]


def chat(client: openai.OpenAI, messages, **kwargs):
    return client.chat.completions.create(model="sim", messages=messages, **kwargs)


@pytest.mark.parametrize("mode", REASONING_MODES)
def test_public_text_never_contains_reasoning(make_shim, client_for, mode):
    shim = make_shim()
    shims = ShimClient(shim.base_url)
    client = client_for(shims.episode_base_url("ep-1"))
    reply = chat(client, directive(say="I want a window seat.", think="SECRET-plan-42", mode=mode))
    message = reply.choices[0].message
    assert message.content == "I want a window seat."
    dumped = reply.model_dump_json()
    assert "SECRET" not in dumped and "<think>" not in dumped and "</think>" not in dumped
    entries = shims.privileged("ep-1")
    assert len(entries) == 1 and entries[0]["public"] == "I want a window seat."
    assert "SECRET-plan-42" in entries[0]["reasoning"]
    if mode == "two_blocks":
        assert entries[0]["reasoning"] == "SECRET-plan-42 A\nSECRET-plan-42 B"


def test_privileged_list_is_aligned_with_replies_including_ones_without_reasoning(make_shim, client_for):
    shim = make_shim()
    shims = ShimClient(shim.base_url)
    client = client_for(shims.episode_base_url("ep-align"))
    script = [
        ("hello", "t0", "inline"),
        ("no thoughts here", None, "none"),
        ("fine", "t2", "reasoning_content"),
        ("", "only thinking", "inline"),
        ("bye", "t4", "reasoning"),
    ]
    replies = []
    for say, think, mode in script:
        raw = client.chat.completions.with_raw_response.create(
            model="sim", messages=directive(say=say, think=think, mode=mode)
        )
        replies.append(raw.parse().choices[0].message.content)
        assert raw.headers["X-Shim-Entry-Index"] == str(len(replies) - 1)
    entries = shims.privileged("ep-align")
    assert [e["index"] for e in entries] == [0, 1, 2, 3, 4]
    assert [e["public"] for e in entries] == replies == [s for s, _, _ in script]
    assert [e["reasoning"] for e in entries] == ["t0", "", "t2", "only thinking", "t4"]
    assert shim.server.store.stats()["entries"] == 5
    stats = shims.stats()["requests"]
    assert stats["empty_public"] == 1 and stats["with_reasoning"] == 4


def test_response_keeps_the_upstream_shape(make_shim, client_for, upstream):
    shim = make_shim(model_override="mimesis-9b")
    client = client_for(ShimClient(shim.base_url).episode_base_url("ep-shape"))
    reply = chat(
        client,
        directive(say="ok", think="t", mode="reasoning_content"),
        temperature=0.3,
        tools=[{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}],
        frequency_penalty=0.5,
        extra_headers={"Authorization": "Bearer client-secret"},
    )
    assert reply.id.startswith("chatcmpl-scripted-") and reply.created == 1_700_000_000
    assert reply.usage.total_tokens == 18 and reply.choices[0].finish_reason == "stop"
    assert reply.model == "mimesis-9b"
    extra = reply.choices[0].message.model_extra or {}
    assert "reasoning_content" not in extra and "reasoning" not in extra
    sent = upstream.server.requests[-1]
    # Everything is forwarded (tools, penalties), the model is forced, the caller's key is not passed on.
    assert sent["body"]["model"] == "mimesis-9b" and sent["body"]["temperature"] == 0.3
    assert sent["body"]["frequency_penalty"] == 0.5 and sent["body"]["tools"][0]["function"]["name"] == "noop"
    assert sent["authorization"] is None


def test_upstream_api_key_is_sent_upstream(make_shim, client_for, upstream):
    shim = make_shim(upstream_api_key="upstream-key")
    chat(client_for(shim.base_url + "/v1"), directive(say="x"))
    assert upstream.server.requests[-1]["authorization"] == "Bearer upstream-key"


def test_tool_call_reply_keeps_null_content_and_stores_an_entry(make_shim, client_for):
    shim = make_shim()
    shims = ShimClient(shim.base_url)
    reply = chat(client_for(shims.episode_base_url("ep-tool")), directive(say="", think="x", mode="tool_call"))
    assert reply.choices[0].message.content is None
    assert reply.choices[0].message.tool_calls[0].function.name == "noop"
    [entry] = shims.privileged("ep-tool")
    assert (entry["index"], entry["reasoning"], entry["public"], entry["finish_reason"]) == (0, "", "", "tool_calls")


def test_unscoped_route_strips_but_stores_nothing(make_shim, client_for):
    shim = make_shim()
    client = client_for(shim.base_url + "/v1")
    reply = chat(client, directive(say="verdict: yes", think="judge reasoning"))
    assert reply.choices[0].message.content == "verdict: yes"
    stats = ShimClient(shim.base_url).stats()
    assert stats["store"]["episodes"] == 0 and stats["store"]["appended"] == 0
    assert stats["requests"]["unscoped"] == 1 and stats["requests"]["ok"] == 1


def test_routes_without_v1_segment_work(make_shim, client_for):
    shim = make_shim()
    chat(client_for(f"{shim.base_url}/ep/ep-nov1"), directive(say="a", think="b"))
    chat(client_for(shim.base_url), directive(say="a", think="b"))
    assert [e["reasoning"] for e in ShimClient(shim.base_url).privileged("ep-nov1")] == ["b"]


def test_streaming_is_refused_with_a_clear_400(make_shim, client_for):
    shim = make_shim()
    shims = ShimClient(shim.base_url)
    client = client_for(shims.episode_base_url("ep-stream"))
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, directive(say="a", think="b"), stream=True)
    assert info.value.status_code == 400 and "stream=true is not supported" in str(info.value)
    assert shims.privileged_record("ep-stream")["known"] is False


def test_n_greater_than_one_is_refused_on_episode_routes(make_shim, client_for):
    shim = make_shim()
    client = client_for(ShimClient(shim.base_url).episode_base_url("ep-n"))
    with pytest.raises(openai.BadRequestError, match="n=2 is not allowed"):
        chat(client, directive(say="a", think="b"), n=2)


def _post(url: str, data: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(
    "path, data, status, fragment",
    [
        ("/ep/ep-x/v1/chat/completions", b"{not json", 400, "not valid JSON"),
        ("/ep/ep-x/v1/chat/completions", b"[1, 2]", 400, "must be a JSON object"),
        ("/ep/ep-x/v1/chat/completions", b'{"model": "m"}', 400, "'messages' list"),
        ("/ep/bad%20id/v1/chat/completions", b'{"messages": []}', 400, "invalid episode id"),
        ("/nowhere", b"{}", 404, "POST /nowhere"),
    ],
)
def test_bad_requests_get_json_errors(make_shim, path, data, status, fragment):
    shim = make_shim()
    got_status, body = _post(shim.base_url + path, data)
    assert got_status == status and fragment in body["error"]["message"]
    assert shim.server.store.stats()["appended"] == 0


def test_oversized_request_is_413_json(make_shim):
    shim = make_shim(max_request_bytes=1000)
    status, body = _post(shim.base_url + "/ep/ep-big/v1/chat/completions", b'{"messages": ["' + b"x" * 2000 + b'"]}')
    assert status == 413 and "POST /ep/ep-big/v1/chat/completions" in body["error"]["message"]
