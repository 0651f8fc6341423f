"""Bearer token on every route, public binds, delete, and eviction seen through HTTP (/stats)."""

from __future__ import annotations

import json
import time

import openai
import pytest
from shim_scripted_upstream import directive

from mimesis_pl.shim import ShimClient, ShimError, StoreLimits

PERSONA = {"gym": "TelepathyGym", "entity": "Violin", "description": "Violin - a wooden string instrument."}
PERSONA_MESSAGES = [
    {"role": "system", "content": f"<persona>{json.dumps(PERSONA)}</persona>"},
    {"role": "user", "content": "Is it played with a bow?"},
]


def _speak(client_for, shims: ShimClient, episode: str, say: str = "hi", think: str | None = "t") -> None:
    client_for(shims.episode_base_url(episode)).chat.completions.create(
        model="sim", messages=directive(say=say, think=think)
    )


def test_bearer_token_guards_every_route(make_shim, client_for):
    shim = make_shim(token="s3cret")
    anonymous = ShimClient(shim.base_url)
    wrong = ShimClient(shim.base_url, token="guess")
    owner = ShimClient(shim.base_url, token="s3cret")
    for api_key in ("EMPTY", "guess"):  # nobody without the token may append entries or use the upstream
        with pytest.raises(openai.AuthenticationError):
            client_for(owner.episode_base_url("ep-auth"), api_key=api_key).chat.completions.create(
                model="sim", messages=directive(say="hi", think="t")
            )
    client_for(owner.episode_base_url("ep-auth"), api_key="s3cret").chat.completions.create(
        model="sim", messages=directive(say="hi", think="t")
    )  # an OpenAI client sends the token as its API key
    for client in (anonymous, wrong):
        for call in (lambda c: c.privileged("ep-auth"), lambda c: c.drop("ep-auth"), lambda c: c.stats()):
            with pytest.raises(ShimError) as info:
                call(client)
            assert info.value.status == 401 and "Authorization: Bearer" in str(info.value)
    assert [e["reasoning"] for e in owner.privileged("ep-auth")] == ["t"]
    stats = owner.stats()
    assert stats["token_required"] is True and stats["requests"]["unauthorized"] == 8
    assert owner.drop("ep-auth") is True


def test_public_bind_without_token_is_refused_and_the_bound_address_is_reported(upstream, capsys):
    import asyncio

    from mimesis_pl.shim import PrivilegedShim
    from mimesis_pl.shim.serve import main as shim_main

    with pytest.raises(ValueError, match="without a token"):
        asyncio.run(PrivilegedShim(upstream.base_url, host="0.0.0.0").start())
    assert shim_main(["--upstream", upstream.base_url, "--host", "0.0.0.0", "--port", "0"]) == 1
    assert "without a token" in capsys.readouterr().err

    async def bound() -> tuple[str, str]:
        shim = PrivilegedShim(upstream.base_url, host="0.0.0.0", token="tok")
        await shim.start()
        try:
            return shim.bind_url, shim.base_url
        finally:
            await shim.stop()

    bind_url, base_url = asyncio.run(bound())
    assert bind_url.startswith("http://0.0.0.0:") and base_url == bind_url.replace("0.0.0.0", "127.0.0.1")


def test_users_and_coach_reads_take_the_shim_token_from_an_env_var(monkeypatch):
    import asyncio

    from mimesis_pl.rollout.services import ScriptedHTTPUserSettings, SimulatorServices

    monkeypatch.setenv("MIMESIS_TEST_SHIM_TOKEN", "from-env")
    services = SimulatorServices(ScriptedHTTPUserSettings(shim_token_env="MIMESIS_TEST_SHIM_TOKEN")).start()
    try:
        user = services.users().for_episode("ep-env", ShimClient(services.shim_url).episode_base_url("ep-env"))

        async def ask():
            try:
                return await user.reply(PERSONA_MESSAGES, episode_id="ep-env")
            finally:
                await user.aclose()

        assert asyncio.run(ask()).public
        with pytest.raises(ShimError):
            ShimClient(services.shim_url).privileged("ep-env")
        assert len(ShimClient(services.shim_url, token="from-env").privileged("ep-env")) == 1
    finally:
        services.stop()


def test_delete_drops_an_episode(make_shim, client_for):
    shim = make_shim()
    shims = ShimClient(shim.base_url)
    _speak(client_for, shims, "ep-del")
    _speak(client_for, shims, "ep-keep")
    assert shims.drop("ep-del") is True and shims.drop("ep-del") is False
    assert shims.privileged_record("ep-del")["known"] is False
    assert len(shims.privileged("ep-keep")) == 1
    assert shims.stats()["store"]["dropped_episodes"] == 1


def test_max_episodes_eviction_over_http(make_shim, client_for):
    shim = make_shim(limits=StoreLimits(max_episodes=3))
    shims = ShimClient(shim.base_url)
    for e in range(5):
        _speak(client_for, shims, f"ep-{e}", say=f"r{e}")
    assert [shims.privileged_record(f"ep-{e}")["known"] for e in range(5)] == [False, False, True, True, True]
    store = shims.stats()["store"]
    assert store["episodes"] == 3 and store["evicted_max_episodes"] == 2 and store["evictions"] == 2


def test_ttl_eviction_over_http(make_shim, client_for):
    shim = make_shim(limits=StoreLimits(ttl_s=1.0))
    shims = ShimClient(shim.base_url)
    _speak(client_for, shims, "ep-old")
    time.sleep(1.2)  # ep-old idles past the TTL; ep-new is then read well within it
    _speak(client_for, shims, "ep-new")
    assert shims.privileged_record("ep-old")["known"] is False
    assert len(shims.privileged("ep-new")) == 1
    store = shims.stats()["store"]
    assert store["evicted_ttl"] == 1 and store["episodes"] == 1


def test_privileged_of_bad_episode_id_is_400(make_shim):
    shims = ShimClient(make_shim().base_url)
    with pytest.raises(ValueError, match="invalid episode id"):
        shims.privileged("a b")  # refused client-side before any request
