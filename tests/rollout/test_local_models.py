"""A trained checkpoint as the job's user simulator (and coach), served in the job on loopback behind the shim."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from mimesis_pl.rollout import CheckpointCoachSettings, CheckpointUserSettings, SimulatorServices
from mimesis_pl.rollout.local_models import running_servers
from mimesis_pl.serve import revision_of

from ..conftest import REPO

TINY = str(REPO / "assets" / "tiny-qwen3")
MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "Hello?"}]


def test_a_checkpoint_user_is_served_behind_the_shim_and_shares_its_server_with_a_coach_of_the_same_folder():
    users = CheckpointUserSettings(model_dir=TINY, enable_thinking=False, max_tokens=8, device="cpu")
    services = SimulatorServices(users).start()
    try:
        assert running_servers() == 1 and services.shim_url and services.upstream_url.endswith("/v1")
        with urllib.request.urlopen(services.upstream_url + "/models", timeout=10) as response:
            (model,) = json.loads(response.read())["data"]
        assert model["revision"] == revision_of(TINY)
        assert users.label == f"checkpoint:tiny-qwen3@{revision_of(TINY)}"  # evaluation caches key on the weights
        user = services.users().for_episode("e1", f"{services.shim_url}/ep/e1/v1")

        async def ask():
            try:
                return await user.reply(MESSAGES, episode_id="e1")
            finally:
                await user.aclose()

        reply = asyncio.run(ask())
        assert reply.public  # the untrained model says something; with thinking off it is all public
        coach, threads = CheckpointCoachSettings(model_dir=TINY, device="cpu").build(200, services.shim_url)
        assert running_servers() == 1  # the same folder and settings: one server, one copy of the weights
        for thread in threads:
            thread.stop()
        assert running_servers() == 1  # the users still hold it
    finally:
        services.stop()
    assert running_servers() == 0


def test_a_folder_that_is_not_a_model_is_refused_at_construction(tmp_path):
    with pytest.raises(ValueError, match=r"users.model_dir=.* is not a folder \(relative paths"):
        CheckpointUserSettings(model_dir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="holds no config.json"):
        CheckpointUserSettings(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="coaching.coach .* needs model_dir"):
        CheckpointCoachSettings()
