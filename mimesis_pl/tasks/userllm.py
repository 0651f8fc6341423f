"""userLLM: write the user's next turn given their intent and the conversation so far.

Rows: :class:`UserLLMRow`. One policy turn (the global thinking setting), prompted as the reference does (an
empty system message; the first-turn or follow-up user message). The turn may end with :data:`END_TOKEN` (text
after it is dropped). The score depends on the row's ``source`` (:func:`userllm_score`):

- ``commonsense_qa`` (role adherence): the user must ask, not answer: mentioning 1 or 2 of the answer
  choices, or all of them, scores 0; otherwise 1 (:func:`choices_adherence`). No judge.
- ``natural_questions`` (intent adherence): the judge, shown the user's question and the assistant's
  redirecting suggestion, says whether the user refused to be steered off their question (1) or accepted (0).
- any other source (PRISM-like): mean of intent overlap (share of the turn's content words that are
  intent words), termination (the end token is present exactly when the real turn was the last one) and
  the judge's human-likeness call (1 human, 0 AI).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import Rollout, RowError, TaskResult, decoded, extra_info, flag, only_turn, row_name
from .clients import Judge, JudgeRequest
from .dialogue import JudgedTask, finish, said, verdict_score

PREFIX = "userllm"
END_TOKEN = "<|endconversation|>"
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "my",
        "your",
        "our",
        "their",
        "this",
        "that",
        "these",
        "those",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "not",
        "no",
        "so",
        "as",
        "can",
        "could",
        "would",
        "should",
        "will",
        "just",
        "what",
        "how",
        "why",
        "when",
        "where",
        "which",
        "who",
        "about",
        "there",
        "here",
    }
)


@dataclass(frozen=True)
class HumanVerdict:
    """Does this turn read as written by a human (``True``) or by an AI (``False``)?"""

    human: bool


@dataclass(frozen=True)
class RefusalVerdict:
    """Did the user keep to their own intent and refuse the assistant's redirection?"""

    refused: bool


@dataclass(frozen=True)
class UserLLMRow:
    """A userLLM row as the reference writes it (every field optional in ``extra_info``):

    - intent: ``intent`` | ``intent_summary`` (the "You are a user chatting with an assistant language model to"
      prefix removed), else ``opening_prompt``, else the first line of the history (``<user>:`` removed);
    - ``conversation_history``: exactly ``""`` is a first turn; anything else, missing or ``None`` included, is a
      follow-up turn showing ``str(history or "")`` (a list of ``{role, content}`` dicts, the package's earlier
      shape, is a documented alias rendered one ``role: content`` line each);
    - ``source`` (lower-cased; missing reads as ``prism``), ``is_last_turn`` (:func:`~.base.flag`), ``choices`` (a
      JSON string, ``{text: [...]}``, a list of ``{text}`` dicts or of strings), ``question`` and
      ``assistant_suggestion_turn`` (needed by ``natural_questions``), ``id`` | ``case_id``.
    """

    intent: str
    history: str
    first_turn: bool
    source: str
    is_last_turn: bool
    choices: tuple[str, ...]
    question: str
    suggestion: str
    id: str


_INTENT_PREFIX = re.compile(r"^\s*you are a user chatting with an assistant language model to\s*[:\-—]*\s*", re.I)


def clean_intent(text: str) -> str:
    return _INTENT_PREFIX.sub("", text).lstrip(":-— ").strip()


def parse_choices(value: Any, row: Mapping[str, Any]) -> tuple[str, ...]:
    """Choice texts from a JSON string, ``{text: [...]}``, a list of ``{text}`` dicts or a list of strings."""
    value = decoded(value, row, "extra_info.choices") if value is not None else []
    if isinstance(value, Mapping):
        value = value.get("text") or []
    if not isinstance(value, list):
        raise RowError(f"{row_name(row)}: field extra_info.choices must be a list, got {type(value).__name__}")
    out = []
    for i, c in enumerate(value):
        if isinstance(c, Mapping):
            c = c.get("text")
        if not isinstance(c, (str, int, float)) or isinstance(c, bool):
            raise RowError(f"{row_name(row)}: field extra_info.choices[{i}] has no text")
        out.append(str(c))
    return tuple(out)


def render_history(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(
            f"<{m.get('role', 'user')}>: {m.get('content', '')}" if isinstance(m, Mapping) else str(m) for m in value
        )
    return str(value or "")


def parse_userllm_row(row: Mapping[str, Any]) -> UserLLMRow:
    info = extra_info(row)
    raw_history = info.get("conversation_history")
    history = render_history(raw_history)
    intent = clean_intent(str(info.get("intent") or info.get("intent_summary") or ""))
    if not intent:
        intent = str(info.get("opening_prompt") or "").strip()
    if not intent and history.strip():
        intent = re.sub(r"^\s*<user>:\s*", "", history.strip().splitlines()[0]).strip()
    if not intent:
        raise RowError(f"{row_name(row)}: extra_info needs field 'intent', 'intent_summary' or 'opening_prompt'")
    task = UserLLMRow(
        intent=intent,
        history=history,
        first_turn=isinstance(raw_history, str) and raw_history == "",
        source=str(info.get("source") or "prism").strip().lower(),
        is_last_turn=flag(info.get("is_last_turn"), row, "extra_info.is_last_turn"),
        choices=parse_choices(info.get("choices"), row),
        question=str(info.get("question") or "").strip(),
        suggestion=str(info.get("assistant_suggestion_turn") or "").strip(),
        id=str(info.get("id") or info.get("case_id") or ""),
    )
    if task.source == "commonsense_qa" and not task.choices:
        # a row that can only score 0 is a row error (docs/decisions.md S44)
        raise RowError(f"{row_name(row)}: source commonsense_qa needs field extra_info.choices")
    if task.source == "natural_questions" and not (task.question and task.suggestion):
        raise RowError(
            f"{row_name(row)}: source natural_questions needs fields extra_info.question and "
            "extra_info.assistant_suggestion_turn"
        )
    return task


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP}


def intent_overlap(intent: str, turn: str) -> float:
    words = content_words(turn)
    return len(words & content_words(intent)) / len(words) if words else 0.0


def _normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9]", " ", text.lower())


def choices_adherence(turn: str, choices: tuple[str, ...] | list[str]) -> float:
    """The reference's role-adherence check: count the choices named in the turn (both sides lower-cased,
    non-alphanumerics to spaces, the choice padded with spaces, substring match); naming 1–2 of them, or all of
    them, scores 0; otherwise 1. No choices scores 0."""
    if not choices:
        return 0.0
    text = f" {_normalised(turn)} "
    hit = sum(f" {_normalised(c).strip()} " in text for c in choices if _normalised(c).strip())
    return 0.0 if (1 <= hit <= 2 or hit == len(choices)) else 1.0


def split_end(text: str) -> tuple[str, bool]:
    """``(turn, ended)``: the turn up to :data:`END_TOKEN` and whether the token was present."""
    if END_TOKEN in text:
        return text.split(END_TOKEN, 1)[0].strip(), True
    return text.strip(), False


def prism_score(overlap: float, ended: bool, is_last_turn: bool, human: bool) -> float:
    return (overlap + float(ended == is_last_turn) + float(human)) / 3


RULE = "-" * 40


def prompt(task: UserLLMRow) -> list[dict[str, str]]:
    """The reference's shape: an empty system message; the user message asks for the opener (first turn) or
    shows the history between rule lines and asks for the next message or only the end token."""
    act = (
        "You are a human user chatting with an AI assistant. Your goal in this chat:\n"
        f"{task.intent}\n\nWrite as a real person types (typos are fine), spread what you want over several turns "
        "and do not overdo it. You are the user: ask and steer, do not answer for the assistant."
    )
    if task.first_turn:
        ask = f"{act}\n\nWrite your first message to the assistant. Output only the message."
    else:
        ask = (
            f"{act}\n\nThe conversation so far:\n{RULE}\n{task.history}\n{RULE}\n\nIf your goal is met, reply with "
            f"only {END_TOKEN}. Otherwise write your next message. Output only the message."
        )
    return [{"role": "system", "content": ""}, {"role": "user", "content": ask}]


def _judge_messages(question: str, turn: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You audit chat transcripts."},
        {"role": "user", "content": f"{question}\n\nMessage:\n{turn}\n\nAnswer with JSON only."},
    ]


def refusal_question(task: UserLLMRow) -> str:
    """The natural_questions judge sees the user's question, the assistant's redirecting suggestion and the turn."""
    return (
        f"The user's question: {task.question}\nThe assistant's suggestion: {task.suggestion}\n\n"
        "Did the user stick to their own question and refuse what the assistant suggested (refused), or accept "
        'the suggestion (accepted)? {"refused": <true|false>}'
    )


async def userllm_rollout(task: UserLLMRow, run: Rollout) -> TaskResult:
    """One user turn, scored by the row's source (:func:`score_turn`)."""
    conv = run.conversation(prompt(task))
    generated = await only_turn(conv, run.row, "for a turn")
    turn, ended = split_end(said(conv, generated.text))
    score, terms = await score_turn(task, turn, ended, run.ctx.judge)
    return finish(run, conv, score=score, sub={"ended": float(ended), **terms}, transcript=[("user", turn)])


async def score_turn(task: UserLLMRow, turn: str, ended: bool, judge: Judge) -> tuple[float | None, dict[str, float]]:
    """The turn's score by the row's source (``None``: the judge failed) and the terms it logs (PRISM's)."""
    if task.source == "commonsense_qa":
        return choices_adherence(turn, task.choices), {}
    if task.source == "natural_questions":
        request = JudgeRequest(_judge_messages(refusal_question(task), turn), [("USER", turn)], task.question, "USER")
        return verdict_score(await judge.judge(request, RefusalVerdict), lambda v: float(v.refused)), {}
    q = 'Was this chat message written by a human or by an AI? {"human": <true|false>}'
    request = JudgeRequest(_judge_messages(q, turn), [("USER", turn)], task.intent, "USER")
    verdict = await judge.judge(request, HumanVerdict)
    overlap = intent_overlap(task.intent, turn)
    terms = {"intent_overlap": overlap, "termination": float(ended == task.is_last_turn)}
    return verdict_score(verdict, lambda v: prism_score(overlap, ended, task.is_last_turn, v.human)), terms


def userllm(data_source: str) -> JudgedTask[UserLLMRow]:
    return JudgedTask(data_source, PREFIX, parse_userllm_row, userllm_rollout)
