"""SimulatorArena: the simulator plays the user against an assistant (the partner), ≤ 8 user turns.

Rows: :class:`ArenaRow` (the reference's ``raw`` merge; docs/decisions.md S42). The judge sees the real user's
queries, the real conversation, the target features and (doc) the document preferences. A failed assistant call
is a ``task_error`` (S40 in docs/decisions.md).

- ``sim_arena_math``: a student with a profile works on a problem with a tutor. The student's message is the
  text after the first ``Response:``, else after the first ``Query:``, else the whole turn.
- ``sim_arena_doc``: a user co-writes a document (type, intent, materials) with a writing assistant; the message
  is the text after the first ``Message:``, else the whole turn. After the dialogue the assistant is asked for the
  final document.

The assistant's first message wraps the user's first message in the task header (:func:`first_message`: the
problem, or the document type, goal and materials), as the reference does. The conversation ends when the user
says so (:func:`wants_to_end`, tolerant of how local models write "terminate conversation") — that turn is not
sent and not judged — after ``max_user_turns`` (8), on an empty message, or when the budget is spent.
One judge call returns every term of the family's typed verdict; ``score`` is the mean of the terms each
normalised to [0, 1], a feature term whose target list is empty counting 0 as in the reference
(:func:`arena_score`). A failed judge call is ``judge_failed`` (the reference counted a missing term as 0;
docs/decisions.md S18). The loop's details: docs/decisions.md S46.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, ClassVar, Literal

from .base import Rollout, RowError, TaskResult, decoded, expect, extra_info, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import JudgedTask, finish, partner_reply, said, transcript_text, verdict_score

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


def arena_score(verdict: MathVerdict | DocVerdict, empty: tuple[str, ...] = ()) -> float:
    """Mean of the verdict's terms, each divided by its scale (the judge client has checked each is in range,
    S60); the terms named in ``empty`` (feature shares whose target list is empty, :func:`empty_terms`) count 0
    whatever the judge said."""
    terms = [0.0 if f.name in empty else getattr(verdict, f.name) / SCALES[f.name] for f in fields(verdict)]
    return sum(terms) / len(terms)


def wants_to_end(text: str) -> bool:
    return bool(_END.search(text))


def extract_message(text: str, kind: Kind) -> str:
    """The message after the family's label — math: the first ``Response:``, else the first ``Query:``; doc: the
    first ``Message:`` — or the whole text; the end marker removed."""
    labels = ("Response:", "Query:") if kind == "math" else ("Message:",)
    for label in labels:
        i = text.find(label)
        if i >= 0:
            text = text[i + len(label) :]
            break
    return _END.sub("", text).strip()


@dataclass(frozen=True)
class ArenaRow:
    """A SimulatorArena row as the reference writes it. Fields live in ``extra_info`` with the decoded JSON of an
    ``extra_info.raw`` string merged over it (``raw`` wins); when ``extra_info`` is not a mapping, the top-level
    row is read. Required: math ``problem``, ``human_user_queries``, ``human_public_conversation``; doc
    ``document_type``, ``intent``, ``human_user_queries``, ``human_public_conversation``. Optional:
    ``user_profile_text``, ``target_interaction_style_features``, (doc) ``target_writing_style_features``,
    ``pre_writing_materials_text``, ``target_document_preferences``."""

    kind: Kind
    problem: str  # math: the problem; doc: the document type
    intent: str  # doc only
    profile: str
    queries: str  # the real user's queries, newline-joined
    conversation: str  # the real conversation, labelled lines
    interaction_features: tuple[tuple[str, str], ...]
    writing_features: tuple[tuple[str, str], ...]
    materials: str
    preferences: str


LABELS = {"math": ("Student", "AI Tutor"), "doc": ("User", "AI Writing Assistant")}


def arena_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a row: ``extra_info`` with its ``raw`` JSON merged over it, or the top-level row."""
    info = row.get("extra_info")
    if isinstance(info, str):
        info = extra_info(row)
    if not isinstance(info, Mapping):
        return {k: v for k, v in row.items() if k != "extra_info"}
    out = dict(info)
    if isinstance(info.get("raw"), str):
        raw = decoded(info["raw"], row, "extra_info.raw")
        if not isinstance(raw, Mapping):
            raise RowError(f"{row_name(row)}: field extra_info.raw must hold a JSON object")
        out.update(raw)
    return out


def _lines(value: Any, row: Mapping[str, Any], name: str) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(expect(value, (str,), row, name))


def _conversation(value: Any, kind: Kind, row: Mapping[str, Any]) -> str:
    if not isinstance(value, list):
        return str(expect(value, (str,), row, "human_public_conversation"))
    user, assistant = LABELS[kind]
    out = []
    for i, m in enumerate(value):
        m = expect(m, (dict,), row, f"human_public_conversation[{i}]")
        out.append(f"{user if m.get('role') == 'user' else assistant}: {m.get('content', '')}")
    return "\n".join(out)


def _features(value: Any, row: Mapping[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    """``(name, question)`` pairs; items without a name or question are skipped, as in the reference."""
    value = decoded(value, row, name) if value is not None else []
    expect(value, (list,), row, name)
    out = []
    for item in value:
        if not isinstance(item, Mapping):
            continue
        question = item.get("Feature Question Answer") or item.get("Feature Question")
        if item.get("Feature Name") and question:
            out.append((str(item["Feature Name"]), str(question)))
    return tuple(out)


def parse_arena_row(row: Mapping[str, Any], kind: Kind) -> ArenaRow:
    info = arena_fields(row)
    needed = ("problem",) if kind == "math" else ("document_type", "intent")
    for name in (*needed, "human_user_queries", "human_public_conversation"):
        if info.get(name) is None:
            raise RowError(f"{row_name(row)}: extra_info needs field {name!r}")
    return ArenaRow(
        kind=kind,
        problem=str(info["problem"] if kind == "math" else info["document_type"]),
        intent=str(info.get("intent") or ""),
        profile=str(info.get("user_profile_text") or ""),
        queries=_lines(info["human_user_queries"], row, "human_user_queries"),
        conversation=_conversation(info["human_public_conversation"], kind, row),
        interaction_features=_features(
            info.get("target_interaction_style_features"), row, "target_interaction_style_features"
        ),
        writing_features=_features(info.get("target_writing_style_features"), row, "target_writing_style_features")
        if kind == "doc"
        else (),
        materials=str(info.get("pre_writing_materials_text") or ""),
        preferences=str(info.get("target_document_preferences") or ""),
    )


def empty_terms(task: ArenaRow) -> tuple[str, ...]:
    """The feature-share terms with no target feature to check (scored 0, as in the reference)."""
    lists = {"fulfilment": task.interaction_features} if task.kind == "math" else {}
    if task.kind == "doc":
        lists = {"writing_features": task.writing_features, "interaction_features": task.interaction_features}
    return tuple(name for name, features in lists.items() if not features)


def assistant_prompt(task: ArenaRow) -> str:
    """The counterpart's system prompt: a tutor (math) or a writing assistant whose final document has 100-500
    words (doc)."""
    if task.kind == "math":
        return "You are a patient math tutor. Help the student work through their problem; do not just give the answer."
    return (
        "You are an AI writing assistant. Work with the user on their document: follow their goals, facts, "
        "preferences and style, revise drafts as they ask, and keep the final document between 100 and 500 words."
    )


def first_message(task: ArenaRow, message: str) -> str:
    """The user's first message as the assistant receives it: the task header, then the message."""
    if task.kind == "math":
        return f"The problem I need help with:\n{task.problem}\n\n{message}"
    return (
        f"The writing task you are helping me with:\nDocument type: {task.problem}\nWhat it is for: {task.intent}\n"
        f"My materials:\n{task.materials}\n\n{message}"
    )


def user_prompt(task: ArenaRow) -> str:
    end = 'When you are done, write "terminate conversation".'
    if task.kind == "math":
        return (
            f"You are a student getting help from a tutor. About you:\n{task.profile}\n\nYour problem:\n"
            f"{task.problem}\n\nWrite like this student would, one message at a time: first 'Query: <your message>', "
            f"then 'Response: <your message>'. {end}"
        )
    return (
        f"You are a person writing a {task.problem} (100-500 words) with an AI assistant.\nWhat you want: "
        f"{task.intent}\nYour materials:\n{task.materials}\nAbout you:\n{task.profile}\n\nShare information "
        f"gradually, like a real user, one message at a time, as 'Message: <your message>'. {end}"
    )


def _feature_list(features: tuple[tuple[str, str], ...]) -> str:
    return "\n".join(f"{i}. {name}: {question}" for i, (name, question) in enumerate(features, 1)) or "(none)"


def judge_prompt(task: ArenaRow, transcript: str, document: str) -> list[dict[str, str]]:
    """One call for every term: the real user's queries (writing style), the real conversation (interaction
    style), the target features (fulfilment) and, for doc, the final document against the target preferences."""
    body = (
        f"Real user's messages:\n{task.queries}\n\nReal conversation:\n{task.conversation}\n\n"
        f"Target interaction-style features:\n{_feature_list(task.interaction_features)}\n"
    )
    if task.kind == "math":
        ask = (
            "Rate the simulated student: writing style vs the real student's messages (1-5), interaction style vs "
            "the real conversation (1-5), and the share of the target interaction features it shows (0-1). JSON "
            'only: {"writing": <1-5>, "interaction": <1-5>, "fulfilment": <0-1>}'
        )
    else:
        body += (
            f"Target writing-style features:\n{_feature_list(task.writing_features)}\n\n"
            f"Final document:\n{document}\nTarget document preferences:\n{task.preferences}\n"
        )
        ask = (
            "Rate the final document against the target preferences (1-10), the simulated user's writing and "
            "interaction style vs the real user (1-5 each), and the shares of the target writing and interaction "
            'features shown (0-1 each). JSON only: {"document": <1-10>, "writing": <1-5>, "interaction": <1-5>, '
            '"writing_features": <0-1>, "interaction_features": <0-1>}'
        )
    return [
        {"role": "system", "content": "You compare a simulated user with a real one."},
        {"role": "user", "content": f"{body}\nSimulated conversation:\n{transcript}\n\n{ask}"},
    ]


async def play_arena(
    task: ArenaRow, run: Rollout
) -> tuple[PolicyConversation, list[dict[str, str]], list[tuple[str, str]], bool]:
    """The conversation: the policy's user turns, each answered by the assistant, for at most ``max_user_turns``;
    it stops before sending a turn that asks to end (or says nothing) and on the length budget. Returns the policy's
    conversation, the assistant's chat, the transcript lines and whether the user ended it."""
    conv = run.conversation(
        [{"role": "system", "content": user_prompt(task)}, {"role": "user", "content": "Start the conversation."}]
    )
    assistant = [{"role": "system", "content": assistant_prompt(task)}]
    lines: list[tuple[str, str]] = []
    ended = False
    for k in range(int(run.option("max_user_turns", 8))):
        try:
            turn = await conv.step()
        except BudgetExhausted:
            break
        public = said(conv, turn.text)
        text = extract_message(public, task.kind)
        ended = wants_to_end(public)
        if ended or not text:  # stops before sending: the closing turn is neither sent nor judged
            break
        lines.append(("SIMULATED user", text))
        assistant.append({"role": "user", "content": first_message(task, text) if k == 0 else text})
        reply = await partner_reply(run.ctx, assistant, what="assistant")
        assistant.append({"role": "assistant", "content": reply})
        lines.append(("assistant", reply))
        try:
            conv.append([{"role": "user", "content": reply}])
        except BudgetExhausted:
            break
    return conv, assistant, lines, ended


async def arena_rollout(task: ArenaRow, run: Rollout) -> TaskResult:
    """Play the conversation (then ask for the final document, doc kind), judge it (:func:`arena_score`)."""
    conv, assistant, lines, ended = await play_arena(task, run)
    document = ""
    if task.kind == "doc" and lines:
        ask = [{"role": "user", "content": "Please write the final document now."}]
        document = await partner_reply(run.ctx, assistant + ask, what="assistant (final document)")
    score: float | None = 0.0
    if any(who.startswith("SIMULATED") for who, _ in lines):
        prompt = judge_prompt(task, transcript_text(lines), document)
        request = JudgeRequest(prompt, lines, task.intent or task.problem, "SIMULATED")
        verdict = await run.ctx.judge.judge(request, MathVerdict if task.kind == "math" else DocVerdict)
        score = verdict_score(verdict, lambda v: arena_score(v, empty_terms(task)))
    return finish(run, conv, score=score, transcript=lines, sub={"ended_by_user": float(ended)})


def sim_arena_math(data_source: str) -> JudgedTask[ArenaRow]:
    return JudgedTask(data_source, "sim_arena_math", partial(parse_arena_row, kind="math"), arena_rollout)


def sim_arena_doc(data_source: str) -> JudgedTask[ArenaRow]:
    return JudgedTask(data_source, "sim_arena_doc", partial(parse_arena_row, kind="doc"), arena_rollout)
