"""Upstream failures reach the caller as status + JSON error, and nothing is stored for them."""

from __future__ import annotations

import logging
import socket
import time

import openai
import pytest
from shim_scripted_upstream import directive

from mimesis_pl.shim import ShimClient

SECRET = "SECRET-the-user-wants-a-refund"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _episode_client(shim, client_for, episode: str, **kwargs) -> tuple[openai.OpenAI, ShimClient]:
    shims = ShimClient(shim.base_url)
    return client_for(shims.episode_base_url(episode), **kwargs), shims


def _assert_nothing_stored(shims: ShimClient, episode: str) -> None:
    record = shims.privileged_record(episode)
    assert record["known"] is False and record["entries"] == []
    assert shims.stats()["store"]["appended"] == 0


@pytest.mark.parametrize(
    "upstream_status, status, error_cls",
    [
        (500, 502, openai.InternalServerError),
        (503, 502, openai.InternalServerError),
        (400, 400, openai.BadRequestError),
        (404, 404, openai.NotFoundError),
        (401, 502, openai.InternalServerError),  # the shim's upstream key is wrong, not the caller's
    ],
)
def test_upstream_http_errors(make_shim, client_for, upstream_status, status, error_cls, caplog):
    shim = make_shim()
    client, shims = _episode_client(shim, client_for, "ep-err")
    with caplog.at_level(logging.WARNING, logger="mimesis_pl.shim.server"), pytest.raises(error_cls) as info:
        client.chat.completions.create(model="sim", messages=directive(say="x", think=SECRET, status=upstream_status))
    exc = info.value
    assert exc.status_code == status
    assert exc.body["type"] == "upstream_error" and exc.body["upstream_status"] == upstream_status
    assert f"HTTP {upstream_status}" in exc.body["message"]
    # The upstream's own words stay out of the reply (they can echo reasoning); the shim's log has them.
    assert "scripted failure" not in exc.body["message"] and SECRET not in str(exc.body)
    assert f"scripted failure {upstream_status}" in caplog.text
    _assert_nothing_stored(shims, "ep-err")
    assert shims.stats()["requests"]["upstream_errors"] == 1


def test_client_retries_on_5xx_still_store_nothing(make_shim, client_for):
    shim = make_shim()
    client, shims = _episode_client(shim, client_for, "ep-retry", max_retries=2)
    with pytest.raises(openai.InternalServerError):
        client.with_options(max_retries=2).chat.completions.create(model="sim", messages=directive(say="x", status=500))
    assert shims.stats()["requests"]["upstream_errors"] == 3  # the client tried three times
    _assert_nothing_stored(shims, "ep-retry")


def test_upstream_timeout_is_504(make_shim, client_for):
    shim = make_shim(upstream_timeout_s=0.2)
    client, shims = _episode_client(shim, client_for, "ep-slow")
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="sim", messages=directive(say="x", think="y", delay=1.0))
    assert info.value.status_code == 504 and "did not answer within 0.2 s" in info.value.body["message"]
    _assert_nothing_stored(shims, "ep-slow")


def test_unreachable_upstream_is_502(make_shim, client_for):
    shim = make_shim(f"http://127.0.0.1:{_free_port()}/v1")
    client, shims = _episode_client(shim, client_for, "ep-down")
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="sim", messages=directive(say="x"))
    assert info.value.status_code == 502 and "cannot reach upstream" in info.value.body["message"]
    assert info.value.body["upstream_status"] is None
    _assert_nothing_stored(shims, "ep-down")


def test_upstream_answer_that_is_not_json_is_502(make_shim, client_for):
    shim = make_shim()
    client, shims = _episode_client(shim, client_for, "ep-html")
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="sim", messages=directive(say="x", mode="not_json"))
    assert "not JSON" in info.value.body["message"] and "gateway page" not in info.value.body["message"]
    _assert_nothing_stored(shims, "ep-html")


def test_cut_off_upstream_reply_leaks_no_reasoning_to_caller_or_log(make_shim, client_for, caplog):
    shim = make_shim()
    client, shims = _episode_client(shim, client_for, "ep-cut")
    with caplog.at_level(logging.DEBUG), pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="sim", messages=directive(say="x", think=SECRET, mode="cut_json"))
    assert "not JSON" in info.value.body["message"]
    assert SECRET not in str(info.value.body) and SECRET not in caplog.text
    assert "[reasoning removed]" in caplog.text  # the diagnostic stays, without the reasoning
    _assert_nothing_stored(shims, "ep-cut")


@pytest.mark.parametrize("mode, status", [("cut_json", None), (None, 500), (None, 400)])
def test_user_simulator_error_carries_no_reasoning(make_shim, mode, status):
    import asyncio

    from mimesis_pl.envs.user_protocol import UserSimulatorError
    from mimesis_pl.users.openai_user import OpenAIUser

    shim = make_shim()
    user = OpenAIUser(base_url=ShimClient(shim.base_url).episode_base_url("ep-user"), model="sim", max_retries=0)
    spec = {"say": "x", "think": SECRET, "mode": mode or "none", **({"status": status} if status else {})}

    async def ask():
        try:
            return await user.reply(directive(**spec), episode_id="ep-user")
        finally:
            await user.aclose()

    with pytest.raises(UserSimulatorError) as info:
        asyncio.run(ask())
    assert SECRET not in str(info.value)


def test_caller_that_hangs_up_leaves_no_entry(make_shim, client_for):
    """A client timeout cancels the shim's upstream call, so the client's retry is the only entry."""
    shim = make_shim()
    client, shims = _episode_client(shim, client_for, "ep-hangup", timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="sim", messages=directive(say="late", think="t", delay=0.8))
    time.sleep(1.0)  # long enough for the upstream reply to have arrived had the call not been cancelled
    _assert_nothing_stored(shims, "ep-hangup")
    client.with_options(timeout=10.0).chat.completions.create(model="sim", messages=directive(say="now", think="t"))
    assert [e["public"] for e in shims.privileged("ep-hangup")] == ["now"]
