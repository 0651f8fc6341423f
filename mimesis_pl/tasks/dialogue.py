"""Shared pieces of the judged families: options, partner calls, the result.

The judged families are Sotopia, CoSER, MirrorBench, Humanual, userLLM and SimulatorArena.

Every judged family runs the simulator through one :class:`PolicyConversation` (its own turns mask 1,
partner / environment / replayed turns mask 0, all from the shared renderer), asks the judge for a
typed verdict, maps it to a score in [0, 1] with a pure function, and ends in :func:`finish`: the
format gate, the status (``no_turns`` when nothing was generated, ``judge_failed`` when the verdict is
missing — never a midpoint, S3), flat float metrics (S20) and the trajectory. The reported score
and the training reward are the same number on the same [0, 1] scale (S23); only the format gate
may zero the training reward. (IDs are entries of docs/decisions.md.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import PartnerUnavailable, TaskContext, TaskResult, row_name
from .conversation import PolicyConversation
from .think_format import check_think_format, gated_reward, public_text


def option(ctx: TaskContext, data_source: str, name: str, default: Any) -> Any:
    """A per-``data_source`` setting from ``task_options`` (e.g. ``{sotopia: {max_turns: 4}}``)."""
    return ctx.options.get(data_source, {}).get(name, default)


def clamp01(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def said(conv: PolicyConversation, text: str) -> str:
    """What others may see of a generated turn: the public part (reasoning never leaks)."""
    return public_text(text, bool(conv.enable_think)).strip()


async def partner_reply(ctx: TaskContext, messages: Sequence[Mapping[str, str]], what: str = "partner") -> str:
    """The partner's reply. A call that failed after the client's bounded retries (or an empty reply) raises
    :class:`PartnerUnavailable`: the rollout is a ``task_error``, never a short dialogue that gets scored
    (docs/decisions.md S40)."""
    reply = await ctx.partner.complete(list(messages))
    if not reply or not reply.strip():
        raise PartnerUnavailable(f"{what} call failed after retries (no reply)")
    return reply.strip()


def transcript_text(lines: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in lines)


def finish(
    conv: PolicyConversation,
    ctx: TaskContext,
    row: Mapping[str, Any],
    *,
    data_source: str,
    prefix: str,
    group_id: str,
    gen_uid: str,
    score: float | None,
    sub: Mapping[str, float] | None = None,
    transcript: Sequence[tuple[str, str]] = (),
    others: Sequence[PolicyConversation] = (),
) -> TaskResult:
    """The :class:`TaskResult` of a judged rollout (``score`` ``None`` = the judge failed).

    ``others``: further conversations of the same rollout (CoSER's other characters); their turns count in the
    status, the format gate and the metrics, and each with a turn becomes an extra trajectory.
    """
    convs = [conv, *(c for c in others if c.turns)]
    turns = [t for c in convs for t in c.turns]
    n = len(turns)
    if n == 0:
        status, value = "no_turns", 0.0
    elif score is None:
        status, value = "judge_failed", 0.0
    else:
        status, value = ("truncated" if any(t.truncated for t in turns) else "ok"), clamp01(score)
    fmt = check_think_format(turns, bool(conv.enable_think), ctx.policy.count_tokens, ctx.min_think_tokens)
    reward = gated_reward(value, fmt, is_train=ctx.is_train)
    turn_tokens = [s.end - s.start for c in convs for s in c.spans]
    words = [len(said(conv, t.text).split()) for t in turns]
    metrics = {
        f"{prefix}/reward": value,
        f"{prefix}/turns": float(n),
        f"{prefix}/turn_tokens": sum(turn_tokens) / max(1, n),
        f"{prefix}/turn_words": sum(words) / max(1, n),
        f"{prefix}/format_correct": float(fmt.correct),
        "all/score": value,
        "all/format_correct": float(fmt.correct),
        "all/think_tokens": fmt.think_tokens,
    }
    for key, v in (sub or {}).items():
        metrics[f"{prefix}/{key}"] = float(v)
    trajectories = [
        c.trajectory(
            group_id=group_id, gen_uid=gen_uid, status=status, reward=reward, data_source=data_source, key=row_name(row)
        )
        for c in convs
    ]
    extra = [{"role": "public_transcript", "content": transcript_text(transcript)}] if transcript else []
    return TaskResult(
        data_source=data_source,
        gen_uid=gen_uid,
        status=status,
        reward=reward,
        score=value,
        metrics=metrics,
        trajectory=trajectories[0],
        transcript=conv.messages + extra,
        extra_trajectories=trajectories[1:],
    )
