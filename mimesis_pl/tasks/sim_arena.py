"""SimulatorArena: the simulator plays the user against an assistant (the partner), ≤ 8 user turns.

- ``sim_arena_math``: a student with a profile works on a problem with a tutor. The student's message is the
  text after ``Query:``/``Response:`` when present; the first one is sent to the tutor with the problem.
- ``sim_arena_doc``: a user co-writes a document (type, intent, materials) with an assistant; the message is
  the text after ``Message:`` when present. After the dialogue the assistant is asked for the final document.

The conversation ends when the user says so (:func:`wants_to_end`, tolerant of how local models write
"terminate conversation"), after ``max_user_turns`` (8), on an empty turn, or when the budget is spent.
One judge call returns every term of the family's typed verdict; ``score`` is the mean of the terms each
normalised to [0, 1] (:func:`arena_score`). A failed judge call is ``judge_failed`` (the reference counted a
missing term as 0; docs/decisions.md S18).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from .base import TaskContext, TaskResult, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import finish, option, partner_reply, said, transcript_text

Kind = Literal["math", "doc"]
_END = re.compile(r"\[?\s*terminate[\s_-]*conversation\s*\]?|<\|endconversation\|>", re.IGNORECASE)


@dataclass(frozen=True)
class MathVerdict:
    """writing, interaction: Likert 1–5 vs the real student; fulfilment: share of target features met (0–1)."""

    #: a score outside its scale is a judge failure, not clamped (docs/decisions.md S60)
    SCORE_RANGES: ClassVar[dict[str, tuple[int, int]]] = {"writing": (1, 5), "interaction": (1, 5)}

    writing: float
    interaction: float
    fulfilment: float


@dataclass(frozen=True)
class DocVerdict:
    """document: 1–10 vs the target preferences; writing, interaction: Likert 1–5; the two feature shares 0–1."""

    SCORE_RANGES: ClassVar[dict[str, tuple[int, int]]] = {"document": (1, 10), "writing": (1, 5), "interaction": (1, 5)}

    document: float
    writing: float
    interaction: float
    writing_features: float
    interaction_features: float


#: field → scale maximum (the value, validated inside its range by the judge client, is divided by it)
SCALES = {
    "writing": 5.0,
    "interaction": 5.0,
    "document": 10.0,
    "fulfilment": 1.0,
    "writing_features": 1.0,
    "interaction_features": 1.0,
}


def arena_score(verdict: MathVerdict | DocVerdict) -> float:
    terms = [getattr(verdict, f.name) / SCALES[f.name] for f in fields(verdict)]
    return sum(terms) / len(terms)


def wants_to_end(text: str) -> bool:
    return bool(_END.search(text))


def extract_message(text: str, kind: Kind) -> str:
    """The message after the family's label (``Query:``/``Response:`` or ``Message:``), the end marker removed."""
    labels = ("Query:", "Response:") if kind == "math" else ("Message:",)
    for label in labels:
        i = text.rfind(label)
        if i >= 0:
            text = text[i + len(label) :]
            break
    return _END.sub("", text).strip()


def user_prompt(kind: Kind, info: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    end = 'When you are done, write "terminate conversation".'
    if kind == "math":
        return (
            "You are a student getting help from a tutor. About you:\n"
            f"{require(info, row, 'profile', 'user_profile')}\n\n"
            f"Your problem:\n{require(info, row, 'problem')}\n\nWrite like this student would, one message at a "
            f"time, as 'Query: <your message>'. {end}"
        )
    return (
        f"You are a person writing a {require(info, row, 'document_type')} with an AI assistant.\nWhat you want: "
        f"{require(info, row, 'intent')}\nYour notes:\n{info.get('materials', '')}\n\nWrite like a real user, one "
        f"message at a time, as 'Message: <your message>'. {end}"
    )


def judge_prompt(kind: Kind, info: Mapping[str, Any], transcript: str, document: str) -> list[dict[str, str]]:
    real = info.get("real_conversation") or info.get("reference_conversation") or ""
    features = info.get("target_features") or info.get("interaction_features") or ""
    if kind == "math":
        ask = (
            "Rate the simulated student: writing style vs the real student (1-5), interaction style vs the real "
            "conversation (1-5), and the share of the target features it shows (0-1). JSON only: "
            '{"writing": <1-5>, "interaction": <1-5>, "fulfilment": <0-1>}'
        )
    else:
        ask = (
            "Rate the final document against the user's target preferences (1-10), the simulated user's writing "
            "and interaction style vs the real user (1-5 each), and the shares of target writing and interaction "
            'features shown (0-1 each). JSON only: {"document": <1-10>, "writing": <1-5>, "interaction": <1-5>, '
            '"writing_features": <0-1>, "interaction_features": <0-1>}'
        )
    body = f"Real conversation:\n{real}\n\nTarget features:\n{features}\n\nSimulated conversation:\n{transcript}\n"
    if document:
        body += f"\nFinal document:\n{document}\nTarget preferences:\n{info.get('preferences', '')}\n"
    return [
        {"role": "system", "content": "You compare a simulated user with a real one."},
        {"role": "user", "content": f"{body}\n{ask}"},
    ]


class SimArenaTask:
    def __init__(self, data_source: str, kind: Kind) -> None:
        self.data_source = data_source
        self.kind: Kind = kind
        self.prefix = f"sim_arena_{kind}"

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info = extra_info(row)
        messages = [
            {"role": "system", "content": user_prompt(self.kind, info, row)},
            {"role": "user", "content": "Start the conversation."},
        ]
        conv = PolicyConversation(ctx.policy, messages, ctx.enable_think, sample=f"{row_name(row)} {gen_uid}")
        assistant = [{"role": "system", "content": "You are a helpful assistant."}]
        lines: list[tuple[str, str]] = []
        ended, partner_failures = False, 0
        for k in range(int(option(ctx, self.data_source, "max_user_turns", 8))):
            try:
                turn = await conv.step()
            except BudgetExhausted:
                break
            public = said(conv, turn.text)
            text = extract_message(public, self.kind)
            ended = wants_to_end(public)
            if text:
                lines.append(("SIMULATED user", text))
            if ended or not text:
                break
            content = f"{info.get('problem')}\n\n{text}" if self.kind == "math" and k == 0 else text
            assistant.append({"role": "user", "content": content})
            reply = await partner_reply(ctx, assistant)
            if reply is None:
                partner_failures += 1
                break
            assistant.append({"role": "assistant", "content": reply})
            lines.append(("assistant", reply))
            try:
                conv.append([{"role": "user", "content": reply}])
            except BudgetExhausted:
                break
        document = ""
        if self.kind == "doc" and lines:
            document = (
                await partner_reply(
                    ctx, assistant + [{"role": "user", "content": "Please write the final document now."}]
                )
                or ""
            )
        score = 0.0
        if any(who.startswith("SIMULATED") for who, _ in lines):
            schema = MathVerdict if self.kind == "math" else DocVerdict
            request = JudgeRequest(
                judge_prompt(self.kind, info, transcript_text(lines), document),
                lines,
                str(info.get("problem") or info.get("intent") or ""),
                "SIMULATED",
            )
            verdict = await ctx.judge.judge(request, schema)
            score = None if verdict is None else arena_score(verdict)
        return finish(
            conv,
            ctx,
            row,
            data_source=self.data_source,
            prefix=self.prefix,
            group_id=group_id,
            gen_uid=gen_uid,
            score=score,
            transcript=lines,
            sub={"ended_by_user": float(ended), "partner_failures": float(partner_failures)},
        )


def sim_arena_math(data_source: str) -> SimArenaTask:
    return SimArenaTask(data_source, "math")


def sim_arena_doc(data_source: str) -> SimArenaTask:
    return SimArenaTask(data_source, "doc")
