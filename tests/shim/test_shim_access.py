"""Bearer token on the privileged routes, delete, and eviction seen through HTTP (/stats)."""

from __future__ import annotations

import time

import pytest

from mimesis_pl.shim import ShimClient, ShimError, StoreLimits
from shim_scripted_upstream import directive


def _speak(client_for, shims: ShimClient, episode: str, say: str = "hi", think: str | None = "t") -> None:
    client_for(shims.episode_base_url(episode)).chat.completions.create(
        model="sim", messages=directive(say=say, think=think)
    )


def test_bearer_token_guards_privileged_routes_only(make_shim, client_for):
    shim = make_shim(token="s3cret")
    anonymous = ShimClient(shim.base_url)
    wrong = ShimClient(shim.base_url, token="guess")
    owner = ShimClient(shim.base_url, token="s3cret")
    _speak(client_for, anonymous, "ep-auth")  # completion routes stay open for unmodified clients
    for client in (anonymous, wrong):
        with pytest.raises(ShimError) as info:
            client.privileged("ep-auth")
        assert info.value.status == 401 and "Authorization: Bearer" in str(info.value)
        with pytest.raises(ShimError) as info:
            client.drop("ep-auth")
        assert info.value.status == 401
    assert [e["reasoning"] for e in owner.privileged("ep-auth")] == ["t"]
    stats = anonymous.stats()
    assert stats["token_required"] is True and stats["requests"]["unauthorized"] == 4
    assert owner.drop("ep-auth") is True


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
