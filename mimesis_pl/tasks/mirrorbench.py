"""MirrorBench: replay a real conversation with the simulator as the user.

The simulator writes each user turn (up to ``min(real user turns, max_turns)``, default 10); after each
one the partner, shown the real conversation as a guide, answers as the assistant ("mirror assistant")
and its reply comes back to the simulator as context (mask 0). The judge rates how close the simulated
user turns are to the real ones in style, tone and realism, a number in [0, 1] that is the score.
A failed judge call is ``judge_failed`` (the reference used 0.5; docs/decisions.md S3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import RowError, TaskContext, TaskResult, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import finish, option, partner_reply, said, transcript_text

PREFIX = "mirrorbench"
NEXT = "Write the user's next message."


@dataclass(frozen=True)
class MirrorVerdict:
    """How much the simulated user turns resemble the real user's (style, tone, realism), in [0, 1]."""

    similarity: float


def real_turns(value: Any, row: Mapping[str, Any]) -> list[dict[str, str]]:
    """The real conversation as ``user``/``assistant`` messages, a trailing assistant turn dropped."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: extra_info.conversation is not valid JSON ({err})") from None
    turns = [
        {"role": str(m.get("role")), "content": str(m.get("content", ""))} for m in value if isinstance(m, Mapping)
    ]
    turns = [m for m in turns if m["role"] in ("user", "assistant")]
    while turns and turns[-1]["role"] == "assistant":
        turns.pop()
    if not any(m["role"] == "user" for m in turns):
        raise RowError(f"{row_name(row)}: extra_info.conversation has no user turn")
    return turns


def strip_label(text: str) -> str:
    """Drop a leading ``user:`` label that small models like to add."""
    head, _, rest = text.partition(":")
    return rest.strip() if head.strip().lower() in ("user", "human") and rest else text.strip()


def system_prompt(info: Mapping[str, Any]) -> str:
    hints = "\n".join(
        f"{k.replace('_', ' ').title()}: {info[k]}" for k in ("task_description", "domain", "persona") if info.get(k)
    )
    return (
        "You stand in for a real person chatting with an AI assistant. Write only the user's next message, "
        "with the length, tone and care real users show (often brief, sometimes sloppy), and no label in front."
        + (f"\n\n{hints}" if hints else "")
    )


def mirror_prompt(real: list[dict[str, str]]) -> str:
    return (
        "You are the assistant in a chat that is being re-enacted. The original chat, for guidance:\n"
        + transcript_text([(m["role"], m["content"]) for m in real])
        + "\n\nAnswer the user's latest message as that assistant would, in a similar length."
    )


def judge_prompt(real: list[dict[str, str]], simulated: list[str]) -> list[dict[str, str]]:
    real_user = "\n".join(f"- {m['content']}" for m in real if m["role"] == "user")
    sim = "\n".join(f"- {t}" for t in simulated)
    return [
        {"role": "system", "content": "You judge how human a simulated chat user sounds."},
        {
            "role": "user",
            "content": (
                f"Real user's messages:\n{real_user}\n\nSimulated user's messages:\n{sim}\n\n"
                "How similar are the simulated messages to the real ones in style, tone, length and realism? "
                'Answer with JSON only: {"similarity": <number 0-1>}'
            ),
        },
    ]


class MirrorBenchTask:
    def __init__(self, data_source: str = "mirrorbench") -> None:
        self.data_source = data_source

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info = extra_info(row)
        real = real_turns(require(info, row, "conversation", "turns"), row)
        n_user = min(sum(m["role"] == "user" for m in real), int(option(ctx, self.data_source, "max_turns", 10)))
        messages = [
            {"role": "system", "content": system_prompt(info)},
            {"role": "user", "content": "Write the user's first message."},
        ]
        conv = PolicyConversation(ctx.policy, messages, ctx.enable_think, sample=f"{row_name(row)} {gen_uid}")
        mirror = [{"role": "system", "content": mirror_prompt(real)}]
        simulated: list[str] = []
        lines: list[tuple[str, str]] = []
        partner_failures = 0
        for k in range(n_user):
            try:
                turn = await conv.step()
            except BudgetExhausted:
                break
            text = strip_label(said(conv, turn.text))
            if not text:
                break
            simulated.append(text)
            lines.append(("SIMULATED user", text))
            if k == n_user - 1:
                break
            mirror.append({"role": "user", "content": text})
            reply = await partner_reply(ctx, mirror)
            if reply is None:
                partner_failures += 1
                break
            mirror.append({"role": "assistant", "content": reply})
            lines.append(("assistant", reply))
            try:
                conv.append([{"role": "user", "content": f"AI: {reply}\n\n{NEXT}"}])
            except BudgetExhausted:
                break
        score = 0.0
        if simulated:
            request = JudgeRequest(
                judge_prompt(real, simulated), lines, str(info.get("task_description", "")), "SIMULATED"
            )
            verdict = await ctx.judge.judge(request, MirrorVerdict)
            score = None if verdict is None else verdict.similarity
        return finish(
            conv,
            ctx,
            row,
            data_source=self.data_source,
            prefix=PREFIX,
            group_id=group_id,
            gen_uid=gen_uid,
            score=score,
            sub={"partner_failures": float(partner_failures)},
            transcript=lines,
        )


def mirrorbench(data_source: str) -> MirrorBenchTask:
    return MirrorBenchTask(data_source)
