"""TauGym (docs/decisions.md A54, A55): task ids as UserRL derives them, tau-bench-shaped retail tools, the
reward rule, whole episodes over the HTTP runtime, the shared rows and instructions, the tau-bench proxy
(against a stand-in shaped like tau-bench's API), and no episode scoping."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import sys
import types

import pytest
from aiohttp import web
from gym_fixtures import GYM_JSON, PARQUET, needs_userrl

from mimesis_pl.envs import Action, EnvironmentManager, GymTask, TaskDataError, Termination, read_gym_tasks
from mimesis_pl.envs.gyms.judging import TAU_RULE_HTTP, TAU_RULE_OFFLINE, gym_graders
from mimesis_pl.envs.gyms.tau import (
    RetailRuntime,
    RetailRuntimeSettings,
    TauBenchRuntime,
    TauGym,
    TauHttpRuntimeSettings,
    parse_task_id,
    parse_tool_call,
    retail,
)
from mimesis_pl.envs.gyms.tau.tool_runtime import ScriptedToolRuntime, make_runtime_app
from mimesis_pl.moved import RENAMED_KINDS
from mimesis_pl.users.scripted import ScriptedUser

RETAIL = "mimesis_pl.envs.gyms.tau.RetailRuntimeSettings"
HTTP = "mimesis_pl.envs.gyms.tau.TauHttpRuntimeSettings"


def tau_row(task_id: str, opening: str = "Hi, I'd like to cancel an order I placed recently.") -> dict:
    """A row shaped as tau_multiturn/test.parquet's (reward_model: env_name, ground_truth '', id, style)."""
    return {
        "data_source": "interact_taugym",
        "prompt": [
            {"role": "system", "content": "TauGym is an environment where you interact with the user and tools."},
            {"role": "user", "content": f"Here is my request: {opening}\nTry to fulfill it step by step!"},
        ],
        "ability": "interaction",
        "reward_model": {"env_name": "TauGym", "ground_truth": "", "id": task_id, "style": "rule"},
        "extra_info": {
            "index": 0,
            "split": "test",
            "need_tools_kwargs": True,
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "TauGym", "id": task_id}}},
        },
    }


@contextlib.asynccontextmanager
async def tau_usi_runtime():
    """The tau-USI scripted runtime served on loopback (its routes send no instruction)."""
    runner = web.AppRunner(make_runtime_app(ScriptedToolRuntime()))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    finally:
        await runner.cleanup()


def call(name: str, **arguments) -> Action:
    return Action("answer", json.dumps({"name": name, "arguments": arguments}))


def play(gym, row, actions):
    async def go():
        await gym.reset(GymTask.from_row(row, source="tau-row"), episode_id="t1")
        try:
            out = []
            for action in actions:
                out.append(await gym.step(action))
                if out[-1].done:
                    break
            return out
        finally:
            await gym.aclose()

    return asyncio.run(go())


def test_task_ids_as_userrl_derives_them():
    assert parse_task_id("retail-000", where="r") == ("retail", "test", 0)
    assert parse_task_id("retail-train-012", where="r") == ("retail", "train", 12)
    assert parse_task_id("airline-049", where="r") == ("airline", "test", 49)
    with pytest.raises(TaskDataError, match="row 3: Tau task id 'shop-1'"):
        parse_task_id("shop-1", where="row 3")


def test_tool_call_parsing():
    assert parse_tool_call('{"name": "think", "arguments": {"thought": "x"}}') == ("think", {"thought": "x"})
    assert parse_tool_call('get_order_details: {"order_id": "#W1"}') == ("get_order_details", {"order_id": "#W1"})
    assert parse_tool_call("cancel it please").startswith("Error: the tool call must be JSON")
    assert parse_tool_call('{"arguments": {}}').startswith('Error: the tool call needs a "name"')


def test_retail_tools_keep_tau_bench_shapes():
    db = copy.deepcopy(retail.RETAIL_DB)
    who = {"first_name": "Ana", "last_name": "Lima", "zip": "10001"}
    assert retail.run_tool(db, "find_user_id_by_name_zip", who) == "ana_lima_1001"
    assert retail.run_tool(db, "find_user_id_by_email", {"email": "nobody@x"}) == "Error: user not found"
    order = json.loads(retail.run_tool(db, "get_order_details", {"order_id": "#W0000001"}))
    assert order["status"] == "pending" and order["items"][0]["price"] == 54.04
    assert retail.run_tool(db, "cancel_pending_order", {"order_id": "#W0000002", "reason": "no longer needed"}) == (
        "Error: non-pending order cannot be cancelled"
    )
    assert retail.run_tool(db, "cancel_pending_order", {"order_id": "#W0000001"}).startswith("Error: bad arguments")
    assert retail.run_tool(db, "fly", {}) == "Error: unknown tool fly"
    names = [s["function"]["name"] for s in retail.tool_specs()]
    assert {"get_order_details", "exchange_delivered_order_items", "transfer_to_human_agents"} <= set(names)


def test_reward_rule_hand_worked():
    task = retail.RETAIL_TASKS[0]
    db = copy.deepcopy(retail.RETAIL_DB)
    assert retail.retail_reward(db, task, []) == 0.0  # nothing done
    retail.run_tool(db, "cancel_pending_order", {"order_id": "#W0000001", "reason": "ordered by mistake"})
    assert retail.retail_reward(db, task, []) == 0.0  # the wrong reason changes the database differently
    db = copy.deepcopy(retail.RETAIL_DB)
    retail.run_tool(db, "cancel_pending_order", {"order_id": "#W0000001", "reason": "no longer needed"})
    assert retail.retail_reward(db, task, []) == 1.0
    info = retail.RETAIL_TASKS[2]
    assert retail.retail_reward(copy.deepcopy(retail.RETAIL_DB), info, ["It cost $54.04."]) == 1.0
    assert retail.retail_reward(copy.deepcopy(retail.RETAIL_DB), info, ["It cost 54 dollars."]) == 0.0
    assert retail.said_outputs(["HAT042"], ["booked hat042, done"])  # case-insensitive, message commas dropped


def tau_bench_outputs_found(outputs, responses):
    """Independent port of tau-bench's output check (envs/base.py calculate_reward)."""
    return all(any(o.lower() in r.lower().replace(",", "") for r in responses) for o in outputs)


@pytest.mark.parametrize(
    ("outputs", "responses"),
    [
        (["1,000"], ["a total of 1000"]),  # an output with a comma never matches in tau-bench
        (["1,000"], ["a total of 1,000"]),
        (["1000"], ["a total of 1,000"]),
        (["54.04"], ["It cost $54.04."]),
        (["Ana", "54.04"], ["ana paid", "54.04"]),
    ],
)
def test_outputs_are_checked_as_tau_bench_checks_them(outputs, responses):
    assert retail.said_outputs(outputs, responses) == tau_bench_outputs_found(outputs, responses)


def test_a_respond_tool_call_is_a_message_to_the_user_as_tau_bench():
    bye = "Your order has been cancelled. Anything else?"
    steps = [call("cancel_pending_order", order_id="#W0000001", reason="no longer needed")]
    by_action = play(TauGym(user=ScriptedUser()), tau_row("retail-000"), [*steps, Action("action", bye)])
    by_tool = play(TauGym(user=ScriptedUser()), tau_row("retail-000"), [*steps, call("respond", content=bye)])
    outcome = [(r.observation, r.reward, r.done) for r in by_action]
    assert [(r.observation, r.reward, r.done) for r in by_tool] == outcome
    assert by_tool[-1].done and by_tool[-1].reward == 1.0


def test_a_whole_episode_over_the_http_runtime_earns_the_reward():
    gym = TauGym(user=ScriptedUser())
    results = play(
        gym,
        tau_row("retail-000"),
        [
            Action("search", "tools"),
            Action("search", "tools"),
            Action("action", "Sure. Could you give me your name and zip code?"),
            call("find_user_id_by_name_zip", first_name="Ana", last_name="Lima", zip="10001"),
            call("get_order_details", order_id="#W0000001"),
            Action("action", "Order #W0000001 is pending. Shall I cancel it because you no longer need it? (yes)"),
            call("cancel_pending_order", order_id="#W0000001", reason="no longer needed"),
            Action("action", "Your order has been cancelled. Anything else?"),
        ],
    )
    tools, again, ask, user_id, order, confirm, cancel, bye = results
    assert "cancel_pending_order" in tools.observation and again.observation.startswith("The tool list was already")
    assert ask.observation == "My name is Ana Lima and my zip code is 10001."
    assert user_id.observation == "ana_lima_1001" and '"status": "pending"' in order.observation
    assert confirm.observation == "Yes, please go ahead." and '"status": "cancelled"' in cancel.observation
    assert "###STOP###" in bye.observation and bye.done and bye.reward == 1.0
    assert sum(r.reward for r in results) == 1.0


def test_a_wrong_change_or_the_turn_limit_earns_nothing():
    wrong = play(
        TauGym(user=ScriptedUser()),
        tau_row("retail-000"),
        [
            call("cancel_pending_order", order_id="#W0000001", reason="ordered by mistake"),
            Action("action", "Your order has been cancelled. Anything else?"),
        ],
    )
    assert wrong[-1].done and wrong[-1].reward == 0.0
    cut = play(TauGym(user=ScriptedUser()), tau_row("retail-002"), [Action("search", "help")])
    assert not cut[-1].done and cut[-1].reward == 0.0 and "search" in cut[-1].observation


def test_transfer_to_human_ends_the_episode():
    actions = [call("transfer_to_human_agents", summary="x")]
    (result,) = play(TauGym(user=ScriptedUser()), tau_row("retail-001"), actions)
    assert result.done and result.observation == "Transfer successful" and result.reward == 0.0


@needs_userrl
def test_shared_rows_with_their_instructions_against_a_served_tau_usi_runtime():
    """The shared rows (ids retail-000…) against a runtime of the tau-USI shape that sends no instruction:
    the user plays the row's instruction from UserRL's tau_test.json."""
    task = read_gym_tasks(PARQUET / "tau_multiturn" / "test.parquet", limit=1)[0]
    assert task.hidden["id"] == "retail-000"
    seen = []

    class Recording(ScriptedUser):
        async def reply(self, messages, *, episode_id):
            seen.append(messages[0]["content"])
            return await super().reply(messages, episode_id=episode_id)

    async def go():
        async with tau_usi_runtime() as url:
            gym = TauGym(
                user=Recording(),
                runtime={"class_path": "TauHttpRuntimeSettings", "init_args": {"url": url}},
                instructions_paths=[GYM_JSON / "TauGym" / "taugym" / "data" / "tau_test.json"],
            )
            await gym.reset(task, episode_id="r0")
            tools = await gym.step(Action("search", "tools"))
            said = await gym.step(Action("action", "How can I help?"))
            await gym.aclose()
        return tools, said

    tools, said = asyncio.run(go())
    assert "get_order_details" in tools.observation
    assert "Yusuf Rossi" in seen[0] and "19122" in seen[0]  # the shared instruction is the persona
    assert "exchange" in said.observation.lower()


def test_missing_instruction_names_the_row():
    async def go():
        async with tau_usi_runtime() as url:
            gym = TauGym(user=ScriptedUser(), runtime=TauHttpRuntimeSettings(url=url))
            try:
                await gym.reset(GymTask.from_row(tau_row("retail-000"), source="tau.parquet:row 0"), episode_id="x")
            finally:
                await gym.aclose()

    with pytest.raises(TaskDataError, match="tau.parquet:row 0: no instruction for Tau task 'retail-000'"):
        asyncio.run(go())


def test_runtime_failure_is_an_env_error():
    manager = EnvironmentManager(
        users=_Users(), gym_options={"TauGym": {"runtime": {"class_path": RETAIL}}}, step_timeout_s=30
    )

    async def go():
        episode = await manager.start(tau_row("retail-009"), "ep-t")  # the offline runtime has tasks 0..2
        return episode.summary()

    summary = asyncio.run(go())
    assert summary.status is Termination.ENV_ERROR and "retail 0..2" in summary.error


class _Users:
    def __init__(self):
        self.bases = []

    def for_episode(self, episode_id, base_url):
        self.bases.append(base_url)
        return ScriptedUser()


def test_tau_is_not_episode_scoped():
    users = _Users()
    manager = EnvironmentManager(users=users, shim_url="http://127.0.0.1:9/v1")

    async def go():
        tau = await manager.start(tau_row("retail-000"), "ep-a")
        await tau.finish()
        row = {
            **tau_row("x"),
            "reward_model": {"env_name": "TelepathyGym", "title": "Kiwi", "ground_truth": "Kiwi, a fruit"},
            "extra_info": {"tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": "TelepathyGym"}}}},
        }
        other = await manager.start(row, "ep-b")
        await other.finish()

    asyncio.run(go())
    assert users.bases == [None, "http://127.0.0.1:9/ep/ep-b/v1"]


# ---------------------------------------------------------------------------------- tau-bench proxy
class _Tool:
    def __init__(self, fn):
        self.fn = fn

    def invoke(self, data, **kwargs):
        return self.fn(data, **kwargs)


def _fake_tau_bench(monkeypatch):
    """A stand-in with tau-bench's API surface (get_env, env.tasks/wiki/tools_info/tools_map/data_load_func)."""

    def get_env(env_name, user_strategy, user_model, task_split, task_index):
        assert user_strategy == "human"  # the proxy never lets tau-bench call an LLM user
        action = types.SimpleNamespace(name="cancel", kwargs={"order_id": "o1"})
        task = types.SimpleNamespace(instruction=f"{env_name}/{task_split} task", actions=[action], outputs=["ok"])

        def cancel(data, order_id):
            data["orders"][order_id] = "cancelled"
            return "done"

        return types.SimpleNamespace(
            tasks=[task],
            wiki="policy",
            tools_info=[{"type": "function", "function": {"name": "cancel"}}],
            tools_map={"cancel": _Tool(cancel)},
            data_load_func=lambda: {"orders": {"o1": "pending"}},
        )

    envs = types.ModuleType("tau_bench.envs")
    envs.get_env = get_env
    monkeypatch.setitem(sys.modules, "tau_bench", types.ModuleType("tau_bench"))
    monkeypatch.setitem(sys.modules, "tau_bench.envs", envs)


def test_tau_bench_proxy_replays_reference_actions_for_the_reward(monkeypatch):
    _fake_tau_bench(monkeypatch)
    runtime = TauBenchRuntime()

    async def go():
        info = await runtime.reset("retail", 0, "train")
        sid = info["session_id"]
        before = await runtime.reward(sid, ["ok"])
        observation = await runtime.step(sid, "cancel", {"order_id": "o1"})
        missing = await runtime.reward(sid, ["nothing"])
        after = await runtime.reward(sid, ["OK, done"])
        unknown = await runtime.step(sid, "fly", {})
        return info, before, observation, missing, after, unknown

    info, before, observation, missing, after, unknown = asyncio.run(go())
    assert info["instruction"] == "retail/train task" and info["tools"] == ["cancel"]
    assert (before, observation, missing, after) == (0.0, "done", 0.0, 1.0)
    assert unknown == "Error: unknown tool fly"


def test_retail_runtime_refuses_unknown_tasks():
    from mimesis_pl.failures import EnvironmentFailure

    with pytest.raises(EnvironmentFailure, match="retail 0..2, not airline 0"):
        asyncio.run(RetailRuntime().reset("airline", 0))


@pytest.mark.parametrize(
    ("old", "new"), [({"kind": "retail"}, RETAIL), ({"kind": "http", "url": "http://127.0.0.1:8300"}, HTTP)]
)
def test_the_old_kind_spelling_fails_naming_its_class_path(old, new):
    assert RENAMED_KINDS["tau runtime"][old["kind"]] == new
    key = "gym_options.TauGym.runtime"
    with pytest.raises(ValueError, match=f"{key}: 'kind: {old['kind']}' was replaced by a class_path") as err:
        TauGym(user=ScriptedUser(), runtime=old)
    assert f"class_path: {new}" in str(err.value)
    with pytest.raises(ValueError, match=new):  # the report's grader label reads the same option
        gym_graders({"tau": TauGym}, {"TauGym": {"runtime": old}})


@pytest.mark.parametrize("bare", [True, False])
def test_a_runtime_is_named_by_its_bare_class_name_or_full_path(bare):
    def named(path, **init_args):
        return {"class_path": path.rsplit(".", 1)[-1] if bare else path, "init_args": init_args}

    assert TauGym(user=ScriptedUser()).runtime_settings == RetailRuntimeSettings()  # the offline default
    assert TauGym(runtime=named(RETAIL, timeout_s=5.0)).runtime_settings == RetailRuntimeSettings(timeout_s=5.0)
    served = TauGym(runtime=named(HTTP, url="http://127.0.0.1:8300")).runtime_settings
    assert served == TauHttpRuntimeSettings(url="http://127.0.0.1:8300") and served.served
    graders = gym_graders({"tau": TauGym}, {"TauGym": {"runtime": named(HTTP, url="http://127.0.0.1:8300")}})
    assert graders == {"tau": TAU_RULE_HTTP}
    assert gym_graders({"tau": TauGym}, {"TauGym": {"runtime": named(RETAIL)}}) == {"tau": TAU_RULE_OFFLINE}
    with pytest.raises(ValueError, match="TauHttpRuntimeSettings needs url: http"):
        TauGym(runtime=named(HTTP, url="127.0.0.1:8300"))
