"""Humanual: write the reply a given person would write, judged against their real reply.

Rows: :class:`HumanualRow`. One policy turn (the global thinking setting). The reply is the first
``<response></response>`` body (any case); a reply without the tag is judged on its whole cleaned text, as in the
reference. The task option ``untagged_factor`` (default 1, the reference) multiplies an untagged reply's score: 0.5
is our earlier rule (docs/decisions.md S80). The judge scores six dimensions in [0, 1]
against the ground-truth reply; ``score = clamp(mean(6) · length_factor)`` (:func:`humanual_score`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .answers import token_f1
from .base import Rollout, RowError, TaskResult, expect, extra_info, only_turn, require, row_name
from .clients import JudgeRequest
from .dialogue import JudgedTask, clamp01, finish, said, verdict_score

PREFIX = "humanual"
_RESPONSE = re.compile(r"<response>(.+?)</response>", re.DOTALL | re.IGNORECASE)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class HumanualVerdict:
    """Similarity of the generated reply to the real one, each in [0, 1]."""

    stance: float
    emotion: float
    belief: float
    value: float
    goal: float
    communication: float


def length_factor(generated: str, reference: str) -> float:
    """1 when the reference is short (< 20 words); else ``min(1, len(gen) / (0.3 · len(ref)))`` in words."""
    ref = len(_WORD.findall(reference))
    if ref < 20:
        return 1.0
    return min(1.0, len(_WORD.findall(generated)) / (0.3 * ref))


def humanual_score(
    verdict: HumanualVerdict, generated: str, reference: str, tagged: bool, untagged_factor: float = 1.0
) -> float:
    """``clamp(mean(6 dimensions) · length_factor)``, times ``untagged_factor`` for a reply without the tag (S80)."""
    judge = sum(getattr(verdict, f.name) for f in fields(verdict)) / len(
        fields(verdict)
    )  # validated in [0, 1] (docs/decisions.md S60)
    return clamp01(judge * length_factor(generated, reference) * (1.0 if tagged else untagged_factor))


def extract_response(public: str) -> tuple[str, bool]:
    """``(reply, tagged)``: the first ``<response>`` body (any case), or the whole public text untagged."""
    found = _RESPONSE.search(public)
    return (found.group(1).strip(), True) if found else (public.strip(), False)


def flatten_context(value: Any) -> str:
    """The context as the reference reads ``prompt``: a JSON message-list string becomes its dict items'
    ``content`` joined with newlines; any other JSON string, or plain text, is used as it is; a non-string
    object is ``str(obj)``."""
    if not isinstance(value, str):
        return str(value)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    if isinstance(parsed, list):
        return "\n".join(str(m.get("content", "")) for m in parsed if isinstance(m, Mapping))
    return value


@dataclass(frozen=True)
class HumanualRow:
    """A Humanual row as the reference writes it: in ``extra_info`` (else the row itself), ``prompt`` (the
    context: :func:`flatten_context`), ``completion`` (the real reply), ``persona`` (default ``""``) and ``id``;
    ``dataset`` and ``category`` are unused."""

    context: str
    reference: str
    persona: str
    id: str


def parse_humanual_row(row: Mapping[str, Any]) -> HumanualRow:
    info = extra_info(row) if row.get("extra_info") is not None else dict(row)
    context = flatten_context(require(info, row, "prompt"))
    reference = require(info, row, "completion")
    expect(reference, (str,), row, "extra_info.completion")
    if not reference.strip():
        raise RowError(f"{row_name(row)}: field extra_info.completion is empty")
    return HumanualRow(context, reference, str(info.get("persona") or ""), str(info.get("id") or ""))


def system_prompt(persona: str) -> str:
    return (
        "You are a human being, not an AI assistant. Your persona:\n"
        f"{persona}\n\n"
        "Reply the way this person really would: their opinions, mood, habits and way of writing, with the "
        "length and informality real people use. Put only your reply inside <response></response>."
    )


def judge_prompt(context: str, reference: str, generated: str) -> list[dict[str, str]]:
    keys = ", ".join(f'"{f.name}": <number 0-1>' for f in fields(HumanualVerdict))
    return [
        {"role": "system", "content": "You compare a simulated person's reply with what the real person wrote."},
        {
            "role": "user",
            "content": (
                f"Context the person replied to:\n{context}\n\nReal reply:\n{reference}\n\n"
                f"Simulated reply:\n{generated}\n\n"
                "Rate how closely the simulated reply matches the real one in stance, emotion, beliefs, values, goals "
                "and communication style. Generic filler where the real reply says something specific scores 0.2 or "
                "less; a reply that copies the context scores 0. Answer with JSON only: {" + keys + "}"
            ),
        },
    ]


async def humanual_rollout(task: HumanualRow, run: Rollout) -> TaskResult:
    """One reply to the context, judged against the real one (:func:`humanual_score`); an empty reply scores 0."""
    context, reference = task.context, task.reference
    conv = run.conversation(
        [{"role": "system", "content": system_prompt(task.persona)}, {"role": "user", "content": context}]
    )
    turn = await only_turn(conv, run.row, "to reply")
    reply, tagged = extract_response(said(conv, turn.text))
    sub = {"tagged": float(tagged), "lexical_f1": token_f1(reply, reference)}  # F1 logged, never rewarded
    score: float | None = 0.0  # an empty reply is the simulator's fault, scored 0 without a judge call
    if reply:
        prompt = judge_prompt(context, reference, reply)
        request = JudgeRequest(prompt, [("SIMULATED", reply)], reference, "SIMULATED")
        verdict = await run.ctx.judge.judge(request, HumanualVerdict)
        factor = float(run.option("untagged_factor", 1.0))
        score = verdict_score(verdict, lambda v: humanual_score(v, reply, reference, tagged, factor))
        if verdict is not None:
            sub["length_factor"] = length_factor(reply, reference)
    return finish(run, conv, score=score, sub=sub, transcript=[("context", context), ("simulated", reply)])


def humanual(data_source: str) -> JudgedTask[HumanualRow]:
    return JudgedTask(data_source, PREFIX, parse_humanual_row, humanual_rollout)
