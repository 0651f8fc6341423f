"""The optional UserRL adapter, over a small env with UserRL's interface (no UserRL package needed)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from gym_fixtures import make_row

from mimesis_pl.envs import EnvironmentManager, GymTask, Termination, default_registry
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.envs.userrl_adapter import userrl_env_factory, userrl_gym_class


class OverpayingEnv:
    """UserRL-style env whose rewards sum past 1 (as UserRL's Intention/Persuade can) and go negative."""

    def __init__(self, task):
        self.task, self.calls, self.closed = task, [], False
        self.rewards = [0.7, -0.2, 0.7, 0.4]

    def reset(self):
        return {"feedback": "start"}, {}

    async def step_async(self, action):
        self.calls.append(action)
        reward = self.rewards.pop(0)
        return {"feedback": f"got {action}"}, reward, not self.rewards, False, {"raw": reward}

    def close(self):
        self.closed = True


def test_adapter_prefixes_actions_and_bounds_rewards():
    Adapted = userrl_gym_class("TravelGym", data_sources=("interact_travelgym",))
    registry = default_registry()
    registry.register(Adapted)
    envs = []

    def factory(task):
        envs.append(OverpayingEnv(task))
        return envs[-1]

    manager = EnvironmentManager(registry=registry, gym_options={"interact_travelgym": {"env_factory": factory}})
    row = make_row("TravelGym", "Plan my trip.", reward_model={"id": "t-1"}, create_kwargs={"id": "t-1"})

    async def go():
        episode = await manager.start(row, "e")
        outs = [
            await episode.step(action_to_tool_call(Action(c, "x"))) for c in ("action", "search", "answer", "answer")
        ]
        return episode, outs

    episode, outs = asyncio.run(go())
    assert envs[0].calls == ["[action] x", "[search] x", "[answer] x", "[answer] x"]
    assert outs[0].observation == "got [action] x"
    assert [o.reward for o in outs] == pytest.approx([0.7, 0.0, 0.3, 0.0])
    assert episode.score == pytest.approx(1.0) and episode.counters["reward_clipped"] == 3
    assert episode.status is Termination.FINISHED and envs[0].closed


def test_missing_package_is_a_clear_error():
    if importlib.util.find_spec("taugym") is not None:
        pytest.skip("taugym is installed here")
    build = userrl_env_factory("TauGym")
    row = make_row("TauGym", "Help.", reward_model={"id": "retail-000"}, create_kwargs={"id": "retail-000"})
    with pytest.raises(ImportError, match="taugym"):
        build(GymTask.from_row(row))
    with pytest.raises(ValueError, match="no UserRL package"):
        userrl_env_factory("ChessGym")
