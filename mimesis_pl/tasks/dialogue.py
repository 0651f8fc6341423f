"""Shared pieces of the judged families: options, partner calls, the result.

The judged families are Sotopia, CoSER, MirrorBench, Humanual, userLLM and SimulatorArena.

Every judged family runs the simulator through one :class:`PolicyConversation` (its own turns mask 1,
partner / environment / replayed turns mask 0, all from the shared renderer), asks the judge for a
typed verdict, maps it to a score in [0, 1] with a pure function, and ends in :func:`finish`: the
format gate, the status (``no_turns`` when nothing was generated, ``judge_failed`` when the verdict is
missing — never a midpoint, S3), flat float metrics (S20) and the trajectory. The reported score
and the training reward are the same number on the same [0, 1] scale (S23); only the format gate
may zero the training reward. (IDs are entries of docs/decisions.md.)

A family is a :class:`JudgedTask`: its ``run`` reads the row (``parse``), then ``rollout`` plays the episode,
asks the judge and scores it, with the row's names carried by one :class:`~.base.Rollout`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..llm.chat_model import RoleCallFailed
from .base import PartnerUnavailable, Rollout, Status, TaskContext, TaskResult
from .conversation import PolicyConversation
from .think_format import FormatCheck, GeneratedTurn, check_think_format, clean_response, gated_reward


def clamp01(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def said(conv: PolicyConversation, text: str) -> str:
    """What others may see of a generated turn: the reference's cleaned text (:func:`clean_response`, S78)."""
    return clean_response(text, bool(conv.enable_think)).strip()


async def partner_reply(ctx: TaskContext, messages: Sequence[Mapping[str, str]], what: str = "partner") -> str:
    """The partner's reply. A call that failed after the client's bounded retries (or an empty reply) raises
    :class:`PartnerUnavailable`: the rollout is a ``task_error``, never a short dialogue that gets scored
    (docs/decisions.md S40)."""
    try:
        reply = await ctx.partner.complete(list(messages))
    except RoleCallFailed as err:
        raise PartnerUnavailable(f"{what} call failed after retries ({err})") from None
    if not reply or not reply.strip():
        raise PartnerUnavailable(f"{what} call failed after retries (no reply)")
    return reply.strip()


def transcript_text(lines: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{who}: {text}" for who, text in lines)


def finish(
    run: Rollout,
    conv: PolicyConversation,
    *,
    score: float | None,
    sub: Mapping[str, float] | None = None,
    transcript: Sequence[tuple[str, str]] = (),
    others: Sequence[PolicyConversation] = (),
) -> TaskResult:
    """The :class:`TaskResult` of a judged rollout (``score`` ``None`` = the judge failed).

    ``others``: further conversations of the same rollout (CoSER's other characters); their turns count in the
    status, the format gate and the metrics, and each with a turn becomes an extra trajectory.
    """
    ctx = run.ctx
    convs = [conv, *(c for c in others if c.turns)]
    turns = [t for c in convs for t in c.turns]
    status, value = judged_status(turns, score)
    fmt = check_think_format(turns, bool(conv.enable_think), ctx.policy.count_tokens, ctx.min_think_tokens)
    reward = gated_reward(value, fmt, is_train=ctx.is_train)
    metrics = judged_metrics(
        run.prefix,
        value,
        fmt,
        turn_tokens=[s.end - s.start for c in convs for s in c.spans],
        turn_words=[len(said(conv, t.text).split()) for t in turns],
        sub=sub or {},
    )
    extra = [{"role": "public_transcript", "content": transcript_text(transcript)}] if transcript else []
    return run.result(
        convs, status=status, reward=reward, score=value, metrics=metrics, transcript=conv.messages + extra
    )


def judged_status(turns: Sequence[GeneratedTurn], score: float | None) -> tuple[Status, float]:
    """The rollout's status and score: ``no_turns`` (0) with no generated turn, ``judge_failed`` (0) without a
    score (never a midpoint, S3), else ``truncated`` or ``ok`` with the score clamped to [0, 1]."""
    if not turns:
        return "no_turns", 0.0
    if score is None:
        return "judge_failed", 0.0
    return ("truncated" if any(t.truncated for t in turns) else "ok"), clamp01(score)


def judged_metrics(
    prefix: str,
    value: float,
    fmt: FormatCheck,
    *,
    turn_tokens: Sequence[int],
    turn_words: Sequence[int],
    sub: Mapping[str, float],
) -> dict[str, float]:
    """The flat float metrics of a judged rollout (S20): the family's (``<prefix>/…``, means per generated turn,
    ``sub`` as ``<prefix>/<key>``) and the headlines (``all/…``)."""
    n = len(turn_words)
    metrics = {
        f"{prefix}/reward": value,
        f"{prefix}/turns": float(n),
        f"{prefix}/turn_tokens": sum(turn_tokens) / max(1, n),
        f"{prefix}/turn_words": sum(turn_words) / max(1, n),
        f"{prefix}/format_correct": float(fmt.correct),
        "all/score": value,
        "all/format_correct": float(fmt.correct),
        "all/think_tokens": fmt.think_tokens,
    }
    for key, v in sub.items():
        metrics[f"{prefix}/{key}"] = float(v)
    return metrics


RowT = TypeVar("RowT")


@dataclass(frozen=True)
class JudgedTask(Generic[RowT]):
    """A judged family's task: ``run`` reads the row with ``parse`` (the typed row, a :class:`RowError` for a bad
    one), then ``rollout`` plays the episode, judges and scores it (ending in :func:`finish`)."""

    data_source: str
    prefix: str  # of the family's metric keys (``sotopia/reward``)
    parse: Callable[[Mapping[str, Any]], RowT]
    rollout: Callable[[RowT, Rollout], Awaitable[TaskResult]]

    def parse_row(self, row: Mapping[str, Any]) -> RowT:
        return self.parse(row)

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        task = self.parse(row)
        return await self.rollout(task, Rollout(row, ctx, self.data_source, self.prefix, group_id, gen_uid))


def verdict_score(verdict: Any, score: Callable[[Any], float]) -> float | None:
    """``score(verdict)``, or ``None`` (the judge failed) when there is no verdict."""
    return None if verdict is None else score(verdict)
