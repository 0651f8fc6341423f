"""How often a served simulator's replies close their ``<think>`` and say something, on a gym's tasks.

The scripted expert (lapsing on a share of its later turns, so that the simulator also meets arguments that answer
nothing) plays each task against the checkpoint exactly as a job's users do (``CheckpointUserSettings``: served in
this process by ``mimesis-pl serve``'s server, thinking on, behind the real shim). Every simulator reply the shim
saw is counted (from its ``/stats``, retries included): *closed* when it closes its reasoning and leaves a
non-empty public utterance, *with reasoning* when the reasoning is not empty. A reply that does not close is
retried, then the episode ends in ``user_error``, as in training.

    python bench/simulator_closing_rate.py assets/sim-persuade --tasks 'assets/data/persuade/test/*.parquet'
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import sys
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mimesis_pl.data.expert_traces import make_expert
from mimesis_pl.envs import EnvironmentManager, read_gym_tasks, run_expert_episode
from mimesis_pl.envs.expert import LapsingExpert
from mimesis_pl.rollout import CheckpointUserSettings, SimulatorServices


async def play(manager: EnvironmentManager, tasks) -> Counter:
    limit = asyncio.Semaphore(8)

    async def one(i, task):
        expert = LapsingExpert(make_expert(task, tasks), rate=0.3, key=f"{task.env_name}/{task.key}", seed=0)
        async with limit:
            trace = await run_expert_episode(manager, task, expert, episode_id=f"rate-{i}")
        return trace.summary.status.value

    return Counter(await asyncio.gather(*(one(i, t) for i, t in enumerate(tasks))))


def shim_counters(shim_url: str) -> dict:
    with urllib.request.urlopen(f"{shim_url}/stats", timeout=30) as reply:
        return json.loads(reply.read())["requests"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--tasks", nargs="+", default=["assets/data/persuade/test/*.parquet"])
    p.add_argument("--max-tasks", type=int, default=None, help="play only the first N tasks")
    p.add_argument("--max-turns", type=int, default=6)
    p.add_argument("--max-tokens", type=int, default=256, help="the simulator's cap per reply (the users' default)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--timeout-s", type=float, default=600.0, help="per reply (a loaded CPU is slow)")
    args = p.parse_args(argv)
    tasks = [t for pattern in args.tasks for path in sorted(glob.glob(pattern)) for t in read_gym_tasks(path)]
    tasks = tasks[: args.max_tasks] if args.max_tasks else tasks
    if not tasks:
        p.error(f"--tasks {args.tasks} matches no task")
    users = CheckpointUserSettings(
        model_dir=args.model_dir,
        device="cpu",
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        timeout_s=args.timeout_s,
    )
    services = SimulatorServices(users).start()
    try:
        manager = EnvironmentManager(users=services.users(), shim_url=services.shim_url, max_turns=args.max_turns)
        statuses = asyncio.run(play(manager, tasks))
        counts = shim_counters(services.shim_url)
    finally:
        services.stop()
    replies, empty = counts["ok"], counts["empty_public"]
    n = max(1, replies)
    print(
        f"{args.model_dir}: {len(tasks)} tasks, {replies} simulator replies (retries included); closed with a public "
        f"utterance {(replies - empty) / n:.1%} ({replies - empty}), "
        f"with reasoning {counts['with_reasoning'] / n:.1%}; "
        f"episodes: {dict(sorted(statuses.items()))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
