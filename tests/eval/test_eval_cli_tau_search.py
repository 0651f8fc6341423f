"""`mimesis-pl test` on the tiny TauGym and SearchGym configs, offline (docs/decisions.md A53–A55).

A scripted served agent (an OpenAI-compatible chat server on loopback, in a thread) plays a fixed
solution, so the episodes reach the gyms' rewards through the whole harness: the data module, the
episode manager, the scripted users behind the shim, the HTTP tool runtime / BM25 index, the report.
The shipped tiny agent itself is run once per config with a short turn budget.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from aiohttp import web

from mimesis_pl.cli import main

TAU_SOLUTION = [  # retail-000 of our own retail environment: cancel Ana Lima's pending order
    ("action", "Could you give me your name and zip code?"),
    (
        "answer",
        {"name": "find_user_id_by_name_zip", "arguments": {"first_name": "Ana", "last_name": "Lima", "zip": "10001"}},
    ),
    ("action", "Shall I cancel order #W0000001 because you no longer need it? (yes)"),
    ("answer", {"name": "cancel_pending_order", "arguments": {"order_id": "#W0000001", "reason": "no longer needed"}}),
    ("action", "Your order has been cancelled. Anything else?"),
]
SEARCH_SOLUTION = [("search", "first prime minister of the Russian Empire"), ("answer", "November 6, 1905")]


class ScriptedAgent:
    """Serves ``/v1/chat/completions``: the next move of the solution for the task in the prompt."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()

    def _move(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        opening = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        if "cancel an order" in opening:
            solution = TAU_SOLUTION
        elif "Russian Empire" in opening:
            solution = SEARCH_SOLUTION
        else:
            return {"role": "assistant", "content": "I cannot help with this one."}  # no tool call: a tool error
        choice, content = solution[min(turn, len(solution) - 1)]
        arguments = json.dumps(
            {"choice": choice, "content": content if isinstance(content, str) else json.dumps(content)}
        )
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "interact_with_env", "arguments": arguments}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    def __enter__(self) -> ScriptedAgent:
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._thread.start()
        assert self._ready.wait(10)
        return self

    async def _serve(self) -> None:
        async def handle(request: web.Request) -> web.Response:
            body = await request.json()
            return web.json_response({"choices": [{"message": self._move(body), "finish_reason": "tool_calls"}]})

        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def run_cli(config: str, tmp_path: Path, *overrides: str) -> dict[str, Any]:
    out = tmp_path / "out"
    argv = ["test", "--config", config, "--model.init_args.out_dir", str(out)]
    argv += ["--trainer.logger.init_args.save_dir", str(tmp_path / "runs"), *overrides]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


def served_agent(url: str) -> tuple[str, ...]:
    agent = {
        "class_path": "mimesis_pl.eval.agent_backend.OpenAIChatAgentSettings",
        "init_args": {"base_url": url, "served_model": "scripted", "revision": "r1", "max_new_tokens": 256},
    }
    return (
        "--model.init_args.agent",
        json.dumps(agent),
        "--model.init_args.n_trials",
        "1",
        "--model.init_args.ks",
        "[1]",
    )


def test_tau_episodes_run_offline_through_mimesis_pl_test(tmp_path):
    with ScriptedAgent() as agent:
        results = run_cli("configs/tiny/eval_tau.yaml", tmp_path, *served_agent(agent.url))
    tau = results["gyms"]["tau"]
    assert (tau["tasks"], tau["scored_trials"], tau["unscored_trials"]) == (3, 3, 0)
    # our offline retail tasks: named as such, and the report says why the numbers are not UserRL's (issue 34)
    offline = "tau-bench's reward rule on our offline retail tasks (not UserRL's tasks)"
    assert results["config"]["graders"] == {"tau": offline}
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert f"Graders: tau: {offline}" in markdown
    assert "- tau: TauGym graded by tau-bench's reward rule: not comparable" in markdown
    assert "not comparable" in results["gym_notes"]["tau"]
    assert tau["avg_at_n"] == 1 / 3  # the solved task earns tau-bench's reward; the others 0
    episodes = [json.loads(line)["episode"] for line in (tmp_path / "out" / "episodes.jsonl").read_text().splitlines()]
    solved = next(e for e in episodes if e["task_id"] == "retail-000")
    assert solved["status"] == "finished" and solved["turn_rewards"][-1] == 1.0
    assert "###STOP###" in solved["steps"][-1]["observation"]


def test_search_episodes_run_offline_through_mimesis_pl_test(tmp_path):
    with ScriptedAgent() as agent:
        results = run_cli("configs/tiny/eval_search.yaml", tmp_path, *served_agent(agent.url))
    search = results["gyms"]["search"]
    assert (search["tasks"], search["scored_trials"]) == (3, 3) and search["avg_at_n"] == 1 / 3
    assert results["config"]["graders"]["search"].startswith("rule (offline default; not comparable")
    episodes = [json.loads(line)["episode"] for line in (tmp_path / "out" / "episodes.jsonl").read_text().splitlines()]
    solved = next(e for e in episodes if e["task_id"] == "Bamboogle-19")
    assert "Sergei Witte" in solved["steps"][0]["observation"] and solved["turn_rewards"] == [0.0, 1.0]


def test_the_tiny_agent_plays_both_configs(tmp_path):
    short = ("--model.init_args.agent.init_args.max_new_tokens", "24", "--model.init_args.n_trials", "1")
    short += ("--model.init_args.ks", "[1]", "--model.init_args.episode.max_turns", "2")
    for config, gym in (("configs/tiny/eval_tau.yaml", "tau"), ("configs/tiny/eval_search.yaml", "search")):
        results = run_cli(config, tmp_path / gym, *short)
        summary = results["gyms"][gym]
        assert summary["tasks"] == 3 and summary["scored_trials"] + summary["unscored_trials"] == 3
