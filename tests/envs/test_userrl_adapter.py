"""The optional UserRL adapter, over a small env with UserRL's interface (no UserRL package needed)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from gym_fixtures import make_row

from mimesis_pl.envs import EnvironmentManager, GymTask, Termination, default_registry
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.envs.userrl_adapter import userrl_env_factory


class OverpayingEnv:
    """UserRL-style env whose rewards sum past 1 (as UserRL's Travel, Intention and Persuade can) and go negative."""

    def __init__(self, task, overrides):
        self.task, self.overrides, self.calls, self.closed = task, dict(overrides), [], False
        self.rewards = [0.8, -0.2, 0.8, 1.0]

    def reset(self):
        return {"feedback": "start"}, {}

    async def step_async(self, action):
        self.calls.append(action)
        reward = self.rewards.pop(0)
        return {"feedback": f"got {action}"}, reward, not self.rewards, False, {"raw": reward}

    def close(self):
        self.closed = True


def test_adapter_is_selected_in_gym_options_and_keeps_userrl_rewards():
    envs = []

    def factory(task, overrides):
        envs.append(OverpayingEnv(task, overrides))
        return envs[-1]

    # the same name as the built-in TravelGym; `userrl:` selects UserRL's package through the adapter
    manager = EnvironmentManager(gym_options={"TravelGym": {"userrl": {"model_name": "sim"}, "env_factory": factory}})
    row = make_row("TravelGym", "Plan my trip.", reward_model={"id": "t-1"}, create_kwargs={"id": "t-1"})

    async def go():
        episode = await manager.start(row, "e")
        outs = [
            await episode.step(action_to_tool_call(Action(c, "x"))) for c in ("action", "search", "answer", "answer")
        ]
        return episode, outs

    episode, outs = asyncio.run(go())
    assert type(episode.gym).__name__ == "UserRLTravelGym"
    assert envs[0].calls == ["[action] x", "[search] x", "[answer] x", "[answer] x"]
    assert outs[0].observation == "got [action] x"
    # UserRL's own rewards: a correct answer after two elicited preferences still earns its 1.0
    assert [o.reward for o in outs] == pytest.approx([0.8, -0.2, 0.8, 1.0])
    assert episode.score == pytest.approx(2.4) and "reward_clipped" not in episode.counters
    assert episode.status is Termination.FINISHED and envs[0].closed
    assert envs[0].overrides == {}  # no shim: the gym keeps its own base_url


def test_builtin_and_adapter_gyms_share_one_registry():
    registry = default_registry()
    assert registry.canonical_name("interact_taugym") == "TauGym"
    assert registry.resolve("TravelGym", {"seed": 1}) == (registry.get("TravelGym"), {"seed": 1})
    cls, options = registry.resolve("interact_taugym", {"userrl": {"user_model": "m"}})
    assert cls.env_name == "TauGym" and options == {"config": {"user_model": "m"}}
    if registry.names().count("TauGym") == 0:
        with pytest.raises(ValueError, match=r"not built in.*gym_options\.TauGym\.userrl"):
            registry.get("TauGym")
    with pytest.raises(ValueError, match="unknown gym 'ChessGym'"):
        registry.resolve("ChessGym", {"userrl": {}})


class ChattyEnv:
    """UserRL-style env that asks its user LLM through ``config.base_url`` (the scripted user's rules)."""

    def __init__(self, task, overrides):
        self.base_url = overrides.get("base_url")

    def reset(self):
        return {"feedback": "start"}, {}

    async def step_async(self, action):
        import openai

        client = openai.AsyncOpenAI(base_url=self.base_url, api_key="EMPTY", max_retries=0, timeout=10.0)
        persona = '<persona>{"gym": "TelepathyGym", "entity": "Kiwi", "description": "a small fuzzy fruit"}</persona>'
        reply = await client.chat.completions.create(
            model="scripted-user",
            messages=[{"role": "system", "content": persona}, {"role": "user", "content": action[9:]}],
        )
        await client.close()
        return {"feedback": reply.choices[0].message.content}, 0.0, False, False, {}


def test_adapter_gyms_with_a_user_go_through_the_shim():
    from mimesis_pl.shim import PrivilegedShim, ServerThread
    from mimesis_pl.users.scripted_server import start_scripted_server

    class Upstream:
        async def start(self):
            self.runner, url = await start_scripted_server()
            return url

        async def stop(self):
            await self.runner.cleanup()

    def factory(task, overrides):
        return ChattyEnv(task, overrides)

    with ServerThread(Upstream(), timeout_s=10.0) as upstream:
        with ServerThread(PrivilegedShim(upstream.base_url, shutdown_timeout_s=1.0), timeout_s=10.0) as shim:
            manager = EnvironmentManager(
                shim_url=shim.base_url, gym_options={"TelepathyGym": {"userrl": {}, "env_factory": factory}}
            )
            row = make_row("TelepathyGym", "Guess.", reward_model={"title": "Kiwi"}, create_kwargs={"title": "Kiwi"})

            async def go():
                episode = await manager.start(row, "adapter-ep")
                assert episode.gym._env.base_url.endswith("/ep/adapter-ep/v1")
                out = await episode.step(action_to_tool_call(Action("action", "Is it a fruit?")))
                await episode.finish()
                return episode, out

            episode, out = asyncio.run(go())
    assert out.observation == "Yes."  # the public reply only: the shim kept the reasoning
    assert episode.privileged[0].reply == "Yes." and "Kiwi" in (episode.privileged[0].reasoning or "")
    assert episode.counters["user_replies"] == 1


def test_missing_package_is_a_clear_error():
    if importlib.util.find_spec("taugym") is not None:
        pytest.skip("taugym is installed here")
    build = userrl_env_factory("TauGym")
    row = make_row("TauGym", "Help.", reward_model={"id": "retail-000"}, create_kwargs={"id": "retail-000"})
    with pytest.raises(ImportError, match="taugym"):
        build(GymTask.from_row(row), {})
    with pytest.raises(ValueError, match="no UserRL package"):
        userrl_env_factory("ChessGym")


# ---------------------------------------------------------------- eval.py's settings (issue 34 item 2, A81)
class FakeConfig:
    """A UserRL-style config holding the package defaults the issue names (Tau retail/test, Turtle 0.9, ...)."""

    def __init__(self, **defaults):
        self.__dict__.update(defaults)


def fake_package(monkeypatch, module_name: str, env_class: str, **defaults):
    """Install a stand-in UserRL module whose env records the config it was built with."""
    import types

    built = []

    class Env:
        def __init__(self, config):
            self.config = config
            built.append(config)

        def reset(self):
            return {"feedback": "hi"}, {}

        def step(self, action):
            return {"feedback": action}, 0.0, True, False, {}

    module = types.ModuleType(module_name)
    module.get_default_config = lambda: FakeConfig(**defaults)
    setattr(module, env_class, Env)
    monkeypatch.setitem(__import__("sys").modules, module_name, module)
    return built


def eval_py_fields(env_name: str, gold: str, max_turns: int) -> dict:
    """An independent port of the fields UserRL's eval/eval.py ``build_env`` sets per gym (max_turns given)."""
    fields = {"max_steps": max_turns, "data_mode": "single", "data_source": gold}
    if env_name == "TravelGym":
        fields.update(one_choice_per_aspect=True, search_correct_reward=0.2, preference_correct_reward=0.6)
    elif env_name == "TurtleGym":
        fields.update(success_threshold=1.0)
    elif env_name == "SearchGym":
        fields.update(eval_method="llm")
    elif env_name == "TauGym":
        fields.update(task_category="retail" if "retail" in gold else "airline")
        fields.update(task_split="train" if "train" in gold else "test")
    return fields


def test_adapter_plays_airline_rows_as_airline_tasks_with_eval_py_settings(monkeypatch):
    import pyarrow.parquet as pq
    from gym_fixtures import PARQUET

    built = fake_package(monkeypatch, "taugym", "TauEnv", task_category="retail", task_split="test", max_steps=30)
    rows = pq.read_table(PARQUET / "tau_multiturn" / "test.parquet").to_pylist()
    airline = next(r for r in rows if r["reward_model"]["id"] == "airline-000")
    train = pq.read_table(PARQUET / "tau_multiturn" / "train.parquet").to_pylist()
    retail_train = next(r for r in train if r["reward_model"]["id"] == "retail-train-004")
    manager = EnvironmentManager(gym_options={"TauGym": {"userrl": {"user_model": "sim"}}}, max_turns=12)

    async def go(row, eid):
        episode = await manager.start(row, eid)
        await episode.step(action_to_tool_call(Action("action", "hello")))

    asyncio.run(go(airline, "a"))
    asyncio.run(go(retail_train, "b"))
    got = [{k: vars(c)[k] for k in eval_py_fields("TauGym", c.data_source, 12)} for c in built]
    assert got == [eval_py_fields("TauGym", "airline-000", 12), eval_py_fields("TauGym", "retail-train-004", 12)]
    assert built[0].task_category == "airline" and built[0].user_model == "sim"


@pytest.mark.parametrize(
    ("env_name", "module", "env_class", "key", "defaults"),
    [
        ("TravelGym", "travelgym", "TravelEnv", "flight:2-1|hotel:2-2", {"preference_correct_reward": 0.2}),
        ("TurtleGym", "turtlegym", "StoryEnv", "The Story", {"success_threshold": 0.9}),
        ("SearchGym", "searchgym", "SearchEnv", "Bamboogle-1", {"eval_method": "rule"}),
    ],
)
def test_adapter_starts_from_eval_py_settings_and_package_defaults_are_an_option(
    monkeypatch, env_name, module, env_class, key, defaults
):
    built = fake_package(monkeypatch, module, env_class, max_steps=20, **defaults)
    field = "title" if env_name == "TurtleGym" else "id"
    row = make_row(env_name, "task", reward_model={field: key}, create_kwargs={field: key})

    async def go(options, eid):
        manager = EnvironmentManager(gym_options={env_name: options}, max_turns=16)
        await manager.start(row, eid)

    asyncio.run(go({"userrl": {}}, "a"))
    asyncio.run(go({"userrl": {}, "userrl_defaults": "package"}, "b"))
    expected = eval_py_fields(env_name, key, 16)
    assert {k: vars(built[0])[k] for k in expected} == expected
    assert {k: vars(built[1])[k] for k in defaults} == defaults and built[1].max_steps == 20


class _ChattyEnvWithKey(ChattyEnv):
    """ChattyEnv that sends the ``api_key`` its config was given, as UserRL's envs do."""

    def __init__(self, task, overrides):
        super().__init__(task, overrides)
        self.api_key = overrides.get("api_key", "EMPTY")

    async def step_async(self, action):
        import openai

        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=10.0)
        persona = '<persona>{"gym": "TelepathyGym", "entity": "Kiwi", "description": "a small fuzzy fruit"}</persona>'
        reply = await client.chat.completions.create(
            model="scripted-user",
            messages=[{"role": "system", "content": persona}, {"role": "user", "content": action[9:]}],
        )
        await client.close()
        return {"feedback": reply.choices[0].message.content}, 0.0, False, False, {}


def test_adapter_gyms_read_a_shim_with_a_token_with_its_token():
    """Issue 35 item 11: with a shim token every privileged read was a 401, so CSD got no evidence."""
    from mimesis_pl.shim import PrivilegedShim, ServerThread
    from mimesis_pl.users.scripted_server import start_scripted_server

    class Upstream:
        async def start(self):
            self.runner, url = await start_scripted_server()
            return url

        async def stop(self):
            await self.runner.cleanup()

    token = "shim-token-0123456789"
    with ServerThread(Upstream(), timeout_s=10.0) as upstream:
        shim_server = PrivilegedShim(upstream.base_url, token=token, shutdown_timeout_s=1.0)
        with ServerThread(shim_server, timeout_s=10.0) as shim:
            manager = EnvironmentManager(
                shim_url=shim.base_url,
                shim_token=token,
                gym_options={"TelepathyGym": {"userrl": {}, "env_factory": _ChattyEnvWithKey}},
            )
            row = make_row("TelepathyGym", "Guess.", reward_model={"title": "Kiwi"}, create_kwargs={"title": "Kiwi"})

            async def go():
                episode = await manager.start(row, "token-ep")
                out = await episode.step(action_to_tool_call(Action("action", "Is it a fruit?")))
                await episode.finish()
                return episode, out

            episode, out = asyncio.run(go())
    assert out.observation == "Yes."
    assert episode.privileged[0].reply == "Yes." and "Kiwi" in (episode.privileged[0].reasoning or "")
