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
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..csd.coach import finish_note
from ..csd.evidence import TurnEvidence, assistant_turns
from ..csd.prompts import NOTE_FRAMINGS, NoteFraming, build_request, frame_note
from ..csd.scripted_coach import ScriptedCoach
from ..envs import EnvironmentManager, Expert, GymTask, interact_tool_schema, read_gym_tasks, run_expert_episode
from ..envs.expert import LapsingExpert
from ..envs.registry import GymRegistry, default_registry
from ..users.scripted import ScriptedUser


def make_expert(task: GymTask, knowledge: Sequence[GymTask], registry: GymRegistry | None = None) -> Expert:
    """The scripted expert of ``task``'s gym (``GymSpec.expert``); guessing experts know the cards of ``knowledge``."""
    registry = registry or default_registry()
    spec = registry.spec(task.env_name)
    if spec.expert is None:
        with_expert = sorted(s.name for s in registry.specs() if s.expert is not None)
        raise ValueError(f"no scripted expert for gym {task.env_name!r}; gyms with one: {with_expert}")
    return spec.expert(task, [t for t in knowledge if t.env_name == task.env_name])


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


def is_coached(key: str, seed: int, share: float) -> bool:
    """Whether the trace of task ``key`` is a coached one (drawn from ``(seed, key)`` alone)."""
    return share > 0 and random.Random(f"{seed}/{key}/coached").random() < share


def insert_coach_notes(
    messages: list[dict[str, Any]],
    privileged: Sequence[Any],
    turns: Sequence[int],
    *,
    framing: NoteFraming = "hindsight",
    coach: ScriptedCoach | None = None,
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The conversation with a coach note as a user message before each of ``turns`` that the coach notes.

    The note is what the CSD job's coach writes for that turn (prospective style, from the user's private
    reasoning behind the reply before it and the public history before it), framed as the job frames it,
    at the place the CSD teacher row puts it: right before the assistant turn. Turns the coach answers
    ``NONE`` get no note. Returns the new messages and the notes by turn.
    """
    coach = coach or ScriptedCoach()
    at = assistant_turns(messages)
    notes: dict[int, str] = {}
    for t in turns:
        if not 1 <= t < len(at):
            continue
        before = privileged[t - 1] if t - 1 < len(privileged) else None
        after = privileged[t] if t < len(privileged) else None
        evidence = TurnEvidence(
            turn=t,
            reasoning_before=(getattr(before, "reasoning", None) or ""),
            reply_after=(getattr(after, "reply", None) or ""),
        )
        result = finish_note(coach.write(build_request(messages, evidence, "prospective")))
        if result.note:
            notes[t] = result.note
    out = list(messages)
    for t in sorted(notes, reverse=True):
        out.insert(at[t], {"role": "user", "content": frame_note(notes[t], framing)})
    return out, notes


async def record_expert_traces(
    tasks: Sequence[GymTask],
    max_turns: int = 16,
    min_score: float = 1.0,
    max_concurrency: int = 16,
    *,
    lapse_rate: float = 0.0,
    seed: int = 0,
    coached_share: float = 0.0,
    note_framing: NoteFraming = "hindsight",
    coach: ScriptedCoach | None = None,
    gym_options: dict[str, dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], Counter]:
    """Play every task once with its expert; keep episodes scoring at least ``min_score``.

    With ``lapse_rate`` > 0 the expert wastes that share of its later turns restating its opening
    (`LapsingExpert`, drawn from ``seed``); lapsed turns are counted as ``lapsed_turns``. With
    ``coached_share`` > 0 that share of traces is coached: every later turn is preceded by the job's coach
    note (`insert_coach_notes`) and the expert follows it (``Expert.reading_notes``; a lapsing expert does not
    lapse on a noted turn), counted as ``coached_traces`` and ``notes``; a turn the coach had nothing for
    (``NONE``) is counted as ``unnoted_turns`` (played without a lapse, shown without a note). The other traces are
    played by ``Expert.uncoached()`` (CueGym's expert then guesses the aspect instead of knowing it).
    ``gym_options``: per gym constructor options, as the jobs' ``episode.gym_options``.
    """
    if not 0.0 <= coached_share <= 1.0:
        raise ValueError(f"coached_share must lie in [0, 1], got {coached_share!r}")
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=max_turns, gym_options=gym_options)
    registry = default_registry()
    counts: Counter = Counter()
    limit = asyncio.Semaphore(max_concurrency)

    async def play(i: int, task: GymTask):
        key = f"{task.env_name}/{task.key}"
        expert = make_expert(task, tasks, registry)
        noted: frozenset[int] = frozenset()
        coached = is_coached(key, seed, coached_share)
        if coached_share > 0 and not coached:
            expert = expert.uncoached()  # an expert that knows what only a note tells plays without it
        if lapse_rate > 0:
            expert = LapsingExpert(expert, rate=lapse_rate, key=key, seed=seed)
        if coached:
            noted = frozenset(range(1, max_turns))
            expert = expert.reading_notes(noted)
        async with limit:
            trace = await run_expert_episode(manager, task, expert, episode_id=f"expert-{i}")
        if lapse_rate > 0:
            counts[f"lapsed_turns/{task.env_name}"] += sum(expert.lapses(t) for t in range(len(trace.turns)))
        return task, trace, noted

    records = []
    for task, trace, noted in await asyncio.gather(*(play(i, t) for i, t in enumerate(tasks))):
        counts[f"played/{task.env_name}"] += 1
        if trace.summary.score < min_score - 1e-9:
            counts[f"unsuccessful/{task.env_name}"] += 1
            continue
        counts[f"recorded/{task.env_name}"] += 1
        record = trace_record(task, trace.turns, registry.get(task.env_name).choices)
        if noted:
            turns = [t for t in sorted(noted) if t < len(trace.turns)]
            record["messages"], notes = insert_coach_notes(
                record["messages"], trace.privileged, turns, framing=note_framing, coach=coach
            )
            record["coach_notes"] = {str(t): n for t, n in notes.items()}
            counts[f"coached_traces/{task.env_name}"] += 1
            counts[f"notes/{task.env_name}"] += len(notes)
            counts[f"unnoted_turns/{task.env_name}"] += len(turns) - len(notes)
        records.append(record)
    return records, counts


def build_parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--seed", type=int, default=0, help="draws the lapses and the coached traces")
    parser.add_argument(
        "--coached-share",
        type=float,
        default=0.0,
        help="share of traces where the job's coach note precedes every later turn and the expert follows it",
    )
    parser.add_argument(
        "--coach-names-open-aspect",
        action="store_true",
        help="the coach names the open aspect (as coaching.coach.name_open_aspect: true in the job; CueGym)",
    )
    parser.add_argument(
        "--coach-names-open-point",
        action="store_true",
        help="the coach names the open point (as coaching.coach.name_open_point: true in the job)",
    )
    parser.add_argument(
        "--note-framing", choices=NOTE_FRAMINGS, default="hindsight", help="as the CSD job frames notes"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace --out when it exists (otherwise refused)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if Path(args.out).exists() and not args.overwrite:
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it, or choose another path")
    if not 0.0 <= args.lapse_rate < 1.0:
        parser.error(f"--lapse-rate must lie in [0, 1), got {args.lapse_rate}")
    if not 0.0 <= args.coached_share <= 1.0:
        parser.error(f"--coached-share must lie in [0, 1], got {args.coached_share}")
    paths = sorted({p for pattern in args.src for p in (glob.glob(pattern) or [pattern])})
    tasks = [task for path in paths for task in read_gym_tasks(path)]
    records, counts = asyncio.run(
        record_expert_traces(
            tasks,
            args.max_turns,
            args.min_score,
            lapse_rate=args.lapse_rate,
            seed=args.seed,
            coached_share=args.coached_share,
            note_framing=args.note_framing,
            coach=ScriptedCoach(
                name_open_point=args.coach_names_open_point, name_open_aspect=args.coach_names_open_aspect
            ),
        )
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(json.dumps({"written": len(records), "out": str(out), **dict(sorted(counts.items()))}, indent=1))
    return 0
