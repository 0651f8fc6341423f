"""EnvironmentManager: per-episode users and URLs, tool errors, failure classification, release."""

from __future__ import annotations

import asyncio

import pytest
from gym_fixtures import make_row

from mimesis_pl.envs import (
    Action,
    EnvironmentManager,
    EpisodeOverError,
    GymRegistry,
    GymTask,
    StepResult,
    TaskDataError,
    Termination,
    episode_base_url,
)
from mimesis_pl.envs.base import Gym
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.users.scripted import ScriptedUser

KIWI = "Kiwi - a small, brown, fuzzy fruit with bright green flesh."


def kiwi_row():
    return make_row(
        "TelepathyGym",
        "I am thinking of a fruit.",
        reward_model={"title": "Kiwi", "ground_truth": KIWI},
        create_kwargs={"title": "Kiwi"},
    )


def say(choice, content):
    return "<think>hm</think>\n" + action_to_tool_call(Action(choice, content))


class RecordingUsers:
    """A provider that hands out tracked scripted users and remembers each episode's base URL."""

    def __init__(self, user_factory=None):
        self.base_urls: dict[str, str | None] = {}
        self.closed: list[str] = []
        self.user_factory = user_factory

    def for_episode(self, episode_id, base_url):
        self.base_urls[episode_id] = base_url
        provider = self
        inner = self.user_factory() if self.user_factory else ScriptedUser()

        class Tracked:
            async def reply(self, messages, *, episode_id):
                return await inner.reply(messages, episode_id=episode_id)

            async def aclose(self):
                provider.closed.append(episode_id)

        return Tracked()


class FailingUser:
    async def reply(self, messages, *, episode_id):
        raise UserSimulatorError("upstream returned 502")

    async def aclose(self):
        pass


class HangingUser:
    async def reply(self, messages, *, episode_id):
        await asyncio.sleep(3600)

    async def aclose(self):
        pass


class BrokenGym(Gym):
    """Raises on the step (or reset) named in its options."""

    env_name = "BrokenGym"
    choices = ("action", "answer")
    needs_user = False
    closed: list[str] = []

    def __init__(self, *, user=None, fail_on="step", exc=None):
        super().__init__(user=user)
        self.fail_on, self.exc = fail_on, exc or RuntimeError("boom")

    async def _reset(self, task):
        if self.fail_on == "reset":
            raise self.exc
        if self.fail_on == "reset-hang":
            await asyncio.sleep(3600)

    async def _step(self, action):
        if self.fail_on == "step":
            raise self.exc
        return StepResult("ok", 0.0, False)

    async def aclose(self):
        BrokenGym.closed.append(self.episode_id)


def broken_row():
    return make_row("BrokenGym", "Do something.", reward_model={"id": "b1"}, create_kwargs={"id": "b1"})


def broken_manager(**options):
    return EnvironmentManager(
        registry=GymRegistry((BrokenGym,)), gym_options={"BrokenGym": options}, step_timeout_s=0.2
    )


def test_episode_urls_are_distinct_and_normalised():
    users = RecordingUsers()
    manager = EnvironmentManager(users=users, shim_url="http://127.0.0.1:8710/v1/")

    async def go():
        a = await manager.start(kiwi_row(), "ep-a")
        b = await manager.start(kiwi_row(), "ep:b")
        return a, b

    a, b = asyncio.run(go())
    assert a.user_base_url == "http://127.0.0.1:8710/ep/ep-a/v1"
    assert b.user_base_url == "http://127.0.0.1:8710/ep/ep:b/v1"
    assert users.base_urls == {"ep-a": a.user_base_url, "ep:b": b.user_base_url}
    with pytest.raises(ValueError, match="ep/b"):  # one URL path segment: the shim's id rules apply
        episode_base_url("http://h:1", "ep/b")
    for shim in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"):
        assert episode_base_url(shim, "x") == "http://h:1/ep/x/v1"
    assert episode_base_url("https://h/prefix/v1", "x") == "https://h/prefix/ep/x/v1"
    with pytest.raises(ValueError):
        EnvironmentManager(users=users, shim_url="127.0.0.1:8710")


def test_no_shim_means_no_episode_url():
    users = RecordingUsers()
    episode = asyncio.run(EnvironmentManager(users=users).start(kiwi_row(), "e"))
    assert episode.user_base_url is None and users.base_urls == {"e": None}


def test_a_turn_without_a_tool_call_ends_the_episode_as_userrl():
    """UserRL's eval.py stops a rollout at a turn with no tool call and scores the rewards so far (A84)."""

    def userrl_rollout(turns: list[tuple[bool, float]]) -> list[float]:
        rewards = []  # independent port: (has a tool call, the step's reward) per turn
        for has_call, reward in turns:
            if not has_call:
                break
            rewards.append(reward)
        return rewards or [0.0]

    async def go(no_tool_call):
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=6, no_tool_call=no_tool_call)
        episode = await manager.start(kiwi_row(), "e")
        outs = [await episode.step(say("action", "Is it fuzzy?")), await episode.step("I think it is a kiwi.")]
        return episode, outs

    episode, outs = asyncio.run(go("end"))
    expected = userrl_rollout([(True, 0.0), (False, 0.0)])
    assert sum(episode.rewards) == sum(expected) and outs[1].done and not outs[0].done
    assert episode.status is Termination.NO_TOOL_CALL and not episode.status.is_failure
    assert episode.counters["tool_error/missing"] == 1
    episode, outs = asyncio.run(go("continue"))
    assert not outs[1].done and episode.status is None


def test_malformed_calls_are_counted_and_the_episode_continues():
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=6, no_tool_call="continue")

    async def go():
        episode = await manager.start(kiwi_row(), "e")
        outs = [
            await episode.step("no tool call here"),
            await episode.step("<tool_call>{broken</tool_call>"),
            await episode.step(say("search", "fruit")),
            await episode.step(say("action", "Is it fuzzy?")),
            await episode.step(say("answer", "kiwi")),
        ]
        return episode, outs

    episode, outs = asyncio.run(go())
    assert [o.observation.split(":")[0] for o in outs[:3]] == ["Error"] * 3
    assert all(o.reward == 0.0 and not o.done for o in outs[:4])
    assert outs[3].observation == "Yes."
    assert outs[4] == ("Correct! I was thinking of Kiwi.", 1.0, True)
    assert episode.status is Termination.FINISHED and episode.score == 1.0
    c = episode.counters
    assert c["turns"] == 5 and c["tool_errors"] == 3
    assert c["tool_error/missing"] == c["tool_error/malformed"] == c["tool_error/choice_not_allowed"] == 1
    # One privileged entry per turn, empty where the simulator was not called.
    assert [p.reasoning is not None for p in episode.privileged] == [False, False, False, True, False]
    assert KIWI in episode.privileged[3].reasoning


def test_turn_budget_ends_the_episode_as_max_turns():
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=2, no_tool_call="continue")

    async def go():
        episode = await manager.start(kiwi_row(), "e")
        first = await episode.step("oops")
        second = await episode.step(say("action", "Is it red?"))
        with pytest.raises(EpisodeOverError):
            await episode.step(say("action", "Is it green?"))
        return episode, first, second

    episode, first, second = asyncio.run(go())
    assert not first.done and second.done and second.observation == "No."
    assert episode.status is Termination.MAX_TURNS and manager.active_episode_ids == []


def test_env_exception_is_env_error_not_a_silent_zero():
    manager = broken_manager(fail_on="step")

    async def go():
        episode = await manager.start(broken_row(), "e")
        return episode, await episode.step(say("action", "go"))

    episode, out = asyncio.run(go())
    assert out.done and out.observation.startswith("Error: the environment failed")
    assert episode.status is Termination.ENV_ERROR and episode.status.is_failure
    assert "RuntimeError: boom" in episode.error
    assert manager.totals["status/env_error"] == 1 and manager.active_episode_ids == []


@pytest.mark.parametrize(("fail_on", "status"), [("reset", Termination.ENV_ERROR), ("reset-hang", Termination.TIMEOUT)])
def test_reset_failures_return_an_ended_episode(fail_on, status):
    manager = broken_manager(fail_on=fail_on)
    episode = asyncio.run(manager.start(broken_row(), "e"))
    assert episode.done and episode.status is status and episode.rewards == [] and episode.turns == 0


def test_bad_task_data_raises_instead_of_ending_quietly():
    manager = broken_manager(fail_on="reset", exc=TaskDataError("row 3: field 'id' is missing"))
    with pytest.raises(TaskDataError, match="row 3"):
        asyncio.run(manager.start(broken_row(), "e"))
    assert manager.active_episode_ids == []


@pytest.mark.parametrize(
    ("user", "status"), [(FailingUser, Termination.USER_ERROR), (HangingUser, Termination.TIMEOUT)]
)
def test_user_failure_and_hang_are_classified(user, status):
    users = RecordingUsers(user_factory=user)
    manager = EnvironmentManager(users=users, step_timeout_s=0.2)

    async def go():
        episode = await manager.start(kiwi_row(), "e")
        return episode, await episode.step(say("action", "Is it fuzzy?"))

    episode, out = asyncio.run(go())
    assert out.done and out.reward == 0.0 and episode.status is status and status.is_failure
    assert users.closed == ["e"]  # released even though it failed


def test_release_closes_gym_and_user_and_finish_is_idempotent():
    users = RecordingUsers()
    manager = EnvironmentManager(users=users)
    BrokenGym.closed.clear()

    async def go():
        a = await manager.start(kiwi_row(), "a")
        assert manager.active_episode_ids == ["a"]
        summary = await a.finish()
        again = await a.finish()
        return summary, again

    summary, again = asyncio.run(go())
    assert summary.status is Termination.ABORTED and again.status is Termination.ABORTED
    assert users.closed == ["a"] and manager.active_episode_ids == []
    assert manager.totals["episodes_released"] == 1


def test_show_reward_is_opt_in_and_identical_otherwise():
    async def final(show):
        manager = EnvironmentManager(users=ScriptedUser(), show_reward=show)
        episode = await manager.start(kiwi_row(), "e")
        return (await episode.step(say("answer", "Kiwi"))).observation

    assert asyncio.run(final(False)) == "Correct! I was thinking of Kiwi."
    assert asyncio.run(final(True)) == "Correct! I was thinking of Kiwi.\nReward: 1"


def test_configuration_errors():
    manager = EnvironmentManager(users=ScriptedUser())

    async def go():
        await manager.start(kiwi_row(), "same")
        with pytest.raises(ValueError, match="already active"):
            await manager.start(kiwi_row(), "same")
        with pytest.raises(ValueError, match="unknown gym 'ChessGym'"):
            await manager.start(make_row("ChessGym", "Plan.", reward_model={"id": "t"}, create_kwargs={"id": "t"}), "t")
        with pytest.raises(ValueError, match="needs a user simulator"):
            await EnvironmentManager().start(kiwi_row(), "x")

    asyncio.run(go())
    with pytest.raises(ValueError, match="unknown gym"):
        EnvironmentManager(gym_options={"NoSuchGym": {}})
    assert EnvironmentManager(gym_options={"interact_function": {"functions_path": "f.json"}}).gym_options == {
        "FunctionGym": {"functions_path": "f.json"}
    }


def test_gyms_are_built_per_episode_with_their_options():
    manager = EnvironmentManager(users=ScriptedUser(), gym_options={"TelepathyGym": {"entities_path": None}})

    async def go():
        a = await manager.start(kiwi_row(), "a")
        b = await manager.start(GymTask.from_row(kiwi_row(), source="r"), "b")
        return a, b

    a, b = asyncio.run(go())
    assert isinstance(a.gym, TelepathyGym) and a.gym is not b.gym
