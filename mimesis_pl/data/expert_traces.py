"""Record scripted-expert episodes in the built-in gyms as agent-SFT conversations.

The reference warm-starts the agent with SFT on successful traces before RL. Offline we have no
such traces, so the scripted experts play the gyms through the same EnvironmentManager an agent
uses, and every *successful* episode becomes one JSONL record: the public prompt, the expert's
assistant turns (a ``<think>`` block and the ``interact_with_env`` tool call, exactly as a policy
would write them) and the tool observations the agent saw, plus the tool schema offered.

    mimesis-pl data record-experts --src assets/data/gyms/train/*.parquet --out traces.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..envs import EnvironmentManager, Expert, GymTask, interact_tool_schema, read_gym_tasks, run_expert_episode
from ..envs.expert import LapsingExpert
from ..envs.gyms.function import FunctionExpert
from ..envs.gyms.intention import IntentionExpert
from ..envs.gyms.persuade import PersuadeExpert
from ..envs.gyms.telepathy import TelepathyExpert
from ..envs.gyms.travel.expert import TravelExpert
from ..envs.gyms.turtle import TurtleExpert
from ..envs.registry import default_registry
from ..users.scripted import ScriptedUser


def make_expert(task: GymTask, knowledge: Sequence[GymTask]) -> Expert:
    """The scripted expert of ``task``'s gym; guessing experts know the cards of ``knowledge``."""
    same_gym = [t for t in knowledge if t.env_name == task.env_name]
    if task.env_name == "FunctionGym":
        return FunctionExpert()
    if task.env_name == "TelepathyGym":
        return TelepathyExpert.from_tasks(same_gym)
    if task.env_name == "TurtleGym":
        return TurtleExpert.from_tasks(same_gym)
    if task.env_name == "IntentionGym":
        return IntentionExpert.for_task(task)
    if task.env_name == "PersuadeGym":
        return PersuadeExpert()
    if task.env_name == "TravelGym":
        return TravelExpert()
    raise ValueError(f"no scripted expert for gym {task.env_name!r}")


def trace_record(task: GymTask, turns, choices: Sequence[str]) -> dict[str, Any]:
    """The conversation of one played episode (observations after the last action are dropped)."""
    messages: list[dict[str, Any]] = task.public_messages()
    for k, turn in enumerate(turns):
        messages.append({"role": "assistant", "content": turn.move.assistant_text()})
        if k < len(turns) - 1:
            messages.append({"role": "tool", "content": turn.observation})
    return {
        "messages": messages,
        "tools": [interact_tool_schema(tuple(choices))],
        "sample_id": f"{task.env_name}/{task.key}",
        "env_name": task.env_name,
        "score": sum(t.reward for t in turns),
    }


async def record_expert_traces(
    tasks: Sequence[GymTask],
    max_turns: int = 16,
    min_score: float = 1.0,
    max_concurrency: int = 16,
    *,
    lapse_rate: float = 0.0,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], Counter]:
    """Play every task once with its expert; keep episodes scoring at least ``min_score``.

    With ``lapse_rate`` > 0 the expert wastes that share of its later turns restating its opening
    (`LapsingExpert`, drawn from ``seed``); lapsed turns are counted as ``lapsed_turns``.
    """
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=max_turns)
    registry = default_registry()
    counts: Counter = Counter()
    limit = asyncio.Semaphore(max_concurrency)

    async def play(i: int, task: GymTask):
        expert = make_expert(task, tasks)
        if lapse_rate > 0:
            expert = LapsingExpert(expert, rate=lapse_rate, key=f"{task.env_name}/{task.key}", seed=seed)
        async with limit:
            trace = await run_expert_episode(manager, task, expert, episode_id=f"expert-{i}")
        if lapse_rate > 0:
            counts[f"lapsed_turns/{task.env_name}"] += sum(expert.lapses(t) for t in range(len(trace.turns)))
        return task, trace

    records = []
    for task, trace in await asyncio.gather(*(play(i, t) for i, t in enumerate(tasks))):
        counts[f"played/{task.env_name}"] += 1
        if trace.summary.score < min_score - 1e-9:
            counts[f"unsuccessful/{task.env_name}"] += 1
            continue
        counts[f"recorded/{task.env_name}"] += 1
        records.append(trace_record(task, trace.turns, registry.get(task.env_name).choices))
    return records, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data record-experts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", nargs="+", required=True, help="UserRL-format gym parquet files (globs allowed)")
    parser.add_argument("--out", required=True, help="output JSONL")
    parser.add_argument("--max-turns", type=int, default=16)
    parser.add_argument("--min-score", type=float, default=1.0, help="keep episodes scoring at least this")
    parser.add_argument(
        "--lapse-rate",
        type=float,
        default=0.0,
        help="share of later turns the expert wastes restating its opening (give --max-turns to spare)",
    )
    parser.add_argument("--seed", type=int, default=0, help="draws the lapses")
    parser.add_argument("--overwrite", action="store_true", help="replace --out when it exists (otherwise refused)")
    args = parser.parse_args(argv)
    if Path(args.out).exists() and not args.overwrite:
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it, or choose another path")
    if not 0.0 <= args.lapse_rate < 1.0:
        parser.error(f"--lapse-rate must lie in [0, 1), got {args.lapse_rate}")
    paths = sorted({p for pattern in args.src for p in (glob.glob(pattern) or [pattern])})
    tasks = [task for path in paths for task in read_gym_tasks(path)]
    records, counts = asyncio.run(
        record_expert_traces(tasks, args.max_turns, args.min_score, lapse_rate=args.lapse_rate, seed=args.seed)
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(json.dumps({"written": len(records), "out": str(out), **dict(sorted(counts.items()))}, indent=1))
    return 0
