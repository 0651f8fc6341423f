"""Record the scripted users' side of gym episodes as simulator SFT rows (role-swap ``chat`` rows).

A learned user simulator for a gym must answer the requests the gym sends it: the gym's persona prompt as
the system message, the agent's utterances as ``user`` turns and its own earlier replies as ``assistant``
turns. The scripted users write exactly such replies, with their private reasoning. This command plays each
task with the gym's scripted expert (optionally lapsing, so that the simulator also meets arguments that answer
nothing) against a recording scripted user and writes, per episode, one row in the reference's role-swap row
format: ``data_source: "chat"`` (the no-swap family: the assistant turns, i.e. the simulator's replies, are
the targets) and ``messages``, each simulator turn as ``<think>\\n{reasoning}\\n</think>\\n\\n{reply}``.
A persona field longer than 40 characters that a thought restates word for word (PersuadeGym's user restates
its whole argument every turn) is written as ``…`` in the rows: it is in the system prompt already, and
restating it made each turn's thought hundreds of tokens long.
Train on them with ``RoleSwapSFTDataModule`` and ``enable_thinking: true`` (our templates then keep every
turn's reasoning; the generation prompt pre-fills ``<think>`` as at serving time).

    mimesis-pl data record-simulator --src assets/data/persuade/train/PersuadeGym.parquet --out sim.parquet
"""

from __future__ import annotations

import argparse
import asyncio
import glob
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..chat.think import join_think
from ..envs import EnvironmentManager, GymTask, read_gym_tasks, run_expert_episode
from ..envs.expert import LapsingExpert
from ..envs.user_protocol import UserReply
from ..users.scripted import ScriptedUser, parse_persona
from .expert_traces import make_expert

#: The role-swap route of these rows: no swap, the assistant (the simulator) is trained.
DATA_SOURCE = "chat"


class RecordingUser:
    """A scripted user that keeps every request and reply, by episode."""

    def __init__(self, user: ScriptedUser | None = None) -> None:
        self.user = user or ScriptedUser()
        self.calls: dict[str, list[tuple[list[dict[str, str]], UserReply]]] = {}

    def for_episode(self, episode_id: str, base_url: str | None) -> RecordingUser:
        return self

    async def reply(self, messages: Sequence[Mapping[str, str]], *, episode_id: str) -> UserReply:
        reply = await self.user.reply(messages, episode_id=episode_id)
        request = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        thought = without_restated_persona(reply.reasoning, parse_persona(messages)) if reply.reasoning else None
        self.calls.setdefault(episode_id, []).append((request, UserReply(reply.public, thought)))
        return reply

    async def aclose(self) -> None:
        return None


def without_restated_persona(reasoning: str, persona: Mapping[str, Any], min_chars: int = 40) -> str:
    """``reasoning`` with every persona value of at least ``min_chars`` characters replaced by ``…``."""
    for value in sorted((str(v) for v in persona.values() if len(str(v)) >= min_chars), key=len, reverse=True):
        reasoning = reasoning.replace(value, "…")
    return reasoning


def simulator_row(calls: Sequence[tuple[list[dict[str, str]], UserReply]], sample_id: str) -> dict[str, Any] | None:
    """One episode's simulator conversation: the last request, each reply with its reasoning; ``None`` when the
    simulator never answered or a reply had no reasoning (nothing to learn the ``<think>`` format from)."""
    if not calls or any(not reply.reasoning for _, reply in calls):
        return None
    messages = [dict(m) for m in calls[-1][0]]
    replies = iter(calls)
    for m in messages:
        if m["role"] == "assistant":
            m["content"] = join_think(next(replies)[1].reasoning, m["content"])
    last = calls[-1][1]
    messages.append({"role": "assistant", "content": join_think(last.reasoning, last.public)})
    return {"data_source": DATA_SOURCE, "messages": messages, "sample_id": sample_id}


async def record_simulator_rows(
    tasks: Sequence[GymTask], *, max_turns: int = 6, lapse_rate: float = 0.3, seed: int = 0, max_concurrency: int = 16
) -> tuple[list[dict[str, Any]], Counter]:
    """Play every task once with its expert (lapsing at ``lapse_rate``) and keep the simulator's side."""
    recorder = RecordingUser()
    manager = EnvironmentManager(users=recorder, max_turns=max_turns)
    limit = asyncio.Semaphore(max_concurrency)
    counts: Counter = Counter()

    async def play(i: int, task: GymTask) -> tuple[GymTask, str]:
        expert = make_expert(task, tasks)
        if lapse_rate > 0:
            expert = LapsingExpert(expert, rate=lapse_rate, key=f"{task.env_name}/{task.key}", seed=seed)
        async with limit:
            await run_expert_episode(manager, task, expert, episode_id=f"sim-{i}")
        return task, f"sim-{i}"

    rows = []
    for task, episode in await asyncio.gather(*(play(i, t) for i, t in enumerate(tasks))):
        row = simulator_row(recorder.calls.get(episode, []), f"{task.env_name}/{task.key}")
        counts[f"played/{task.env_name}"] += 1
        if row is None:
            counts[f"skipped_no_reasoning/{task.env_name}"] += 1
            continue
        counts[f"recorded/{task.env_name}"] += 1
        counts["replies"] += sum(m["role"] == "assistant" for m in row["messages"])
        rows.append(row)
    return rows, counts


def write_rows(rows: Sequence[dict[str, Any]], out: Path) -> None:
    """Parquet (``.parquet``) or JSON lines (anything else)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(list(rows)), out)
        return
    import json

    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data record-simulator", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", nargs="+", required=True, help="UserRL-format gym parquet files (globs allowed)")
    parser.add_argument("--out", required=True, type=Path, help="output .parquet (or .jsonl)")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--lapse-rate", type=float, default=0.3, help="share of later expert turns that answer nothing")
    parser.add_argument("--seed", type=int, default=0, help="draws the lapses")
    parser.add_argument("--overwrite", action="store_true", help="replace --out when it exists (otherwise refused)")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.overwrite:
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it, or choose another path")
    if not 0.0 <= args.lapse_rate < 1.0:
        parser.error(f"--lapse-rate must lie in [0, 1), got {args.lapse_rate}")
    paths = sorted({p for pattern in args.src for p in glob.glob(pattern)})
    if not paths:
        parser.error(f"--src {' '.join(args.src)} matches no file")
    tasks = [task for path in paths for task in read_gym_tasks(path)]
    rows, counts = asyncio.run(
        record_simulator_rows(tasks, max_turns=args.max_turns, lapse_rate=args.lapse_rate, seed=args.seed)
    )
    write_rows(rows, args.out)
    print(f"wrote {len(rows)} simulator conversations to {args.out}: {dict(sorted(counts.items()))}")
    return 0
