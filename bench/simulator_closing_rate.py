"""How often a served simulator's replies close their ``<think>`` and say something, on a gym's tasks.

The scripted expert (lapsing on a share of its later turns, so that the simulator also meets arguments that answer
nothing) plays each task against the checkpoint, served by ``mimesis-pl serve``'s server in this process with
thinking on (the template pre-fills ``<think>``). Every simulator reply is counted: *closed* when it closes the
reasoning and leaves a non-empty public utterance, *with reasoning* when the reasoning is not empty. A reply that
does not close is a failed turn (the episode ends in ``user_error``, as in training: no retry here).

    python bench/simulator_closing_rate.py assets/sim-persuade --tasks 'assets/data/persuade/test/*.parquet'
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mimesis_pl.data.expert_traces import make_expert
from mimesis_pl.envs import EnvironmentManager, read_gym_tasks, run_expert_episode
from mimesis_pl.envs.expert import LapsingExpert
from mimesis_pl.envs.user_protocol import UserSimulatorError
from mimesis_pl.serve import ServeSettings, start_in_background
from mimesis_pl.users.openai_user import OpenAIUser


class CountingUser:
    """An :class:`OpenAIUser` (no retries, reasoning pre-filled) that counts how each reply came back."""

    def __init__(self, user: OpenAIUser) -> None:
        self.user = user
        self.counts: Counter = Counter()

    def for_episode(self, episode_id: str, base_url: str | None) -> CountingUser:
        return self

    async def reply(self, messages, *, episode_id: str):
        self.counts["replies"] += 1
        try:
            reply = await self.user.reply(messages, episode_id=episode_id)
        except UserSimulatorError:
            self.counts["not_closed_or_empty"] += 1
            raise
        self.counts["closed"] += 1
        self.counts["with_reasoning"] += bool(reply.reasoning)
        return reply

    async def aclose(self) -> None:
        await self.user.aclose()


async def measure(
    url: str, model: str, tasks, *, max_turns: int, max_tokens: int, temperature: float, timeout_s: float
) -> Counter:
    user = CountingUser(
        OpenAIUser(
            base_url=url,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            max_retries=0,
            timeout_s=timeout_s,
            enable_thinking=True,
            seed=0,
        )
    )
    manager = EnvironmentManager(users=user, max_turns=max_turns)
    limit = asyncio.Semaphore(8)

    async def play(i, task):
        expert = LapsingExpert(make_expert(task, tasks), rate=0.3, key=f"{task.env_name}/{task.key}", seed=0)
        async with limit:
            trace = await run_expert_episode(manager, task, expert, episode_id=f"rate-{i}")
        return trace.summary.status.value

    statuses = await asyncio.gather(*(play(i, t) for i, t in enumerate(tasks)))
    await user.aclose()
    return user.counts + Counter(f"status/{s}" for s in statuses)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--tasks", nargs="+", default=["assets/data/persuade/test/*.parquet"])
    p.add_argument("--max-turns", type=int, default=6)
    p.add_argument("--max-tokens", type=int, default=256, help="the simulator's cap per reply (the users' default)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--timeout-s", type=float, default=600.0, help="per reply (a loaded CPU is slow)")
    args = p.parse_args(argv)
    tasks = [t for pattern in args.tasks for path in sorted(glob.glob(pattern)) for t in read_gym_tasks(path)]
    if not tasks:
        p.error(f"--tasks {args.tasks} matches no task")
    with start_in_background(ServeSettings(model_dir=args.model_dir, port=0, device="cpu")) as server:
        counts = asyncio.run(
            measure(
                server.url,
                server.model_name,
                tasks,
                max_turns=args.max_turns,
                max_tokens=args.max_tokens,
                temperature=args.temperature,
                timeout_s=args.timeout_s,
            )
        )
    n = max(1, counts["replies"])
    print(
        f"{args.model_dir}: {len(tasks)} tasks, {counts['replies']} simulator replies; closed with a public utterance "
        f"{counts['closed'] / n:.1%} ({counts['closed']}), "
        f"with non-empty reasoning {counts['with_reasoning'] / n:.1%}; "
        f"episodes: {dict(sorted((k[7:], v) for k, v in counts.items() if k.startswith('status/')))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
