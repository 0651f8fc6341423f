"""userLLM: write the user's next turn given their intent and the conversation so far.

One policy turn (the global thinking setting). The turn may end with :data:`END_TOKEN` (text after
it is dropped). The score depends on the row's ``source`` (:func:`userllm_score`):

- ``commonsense_qa`` (role adherence): the user must ask, not answer: mentioning 1 or 2 of the answer
  choices, or all of them, scores 0; otherwise 1. No judge.
- ``natural_questions`` (intent adherence): the judge says whether the user refused to be steered off
  their intent (1) or accepted (0).
- any other source (PRISM-like): mean of intent overlap (share of the turn's content words that are
  intent words), termination (the end token is present exactly when the real turn was the last one) and
  the judge's human-likeness call (1 human, 0 AI).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import RowError, TaskContext, TaskResult, extra_info, require, row_name
from .clients import JudgeRequest
from .conversation import BudgetExhausted, PolicyConversation
from .dialogue import finish, said

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


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP}


def intent_overlap(intent: str, turn: str) -> float:
    words = content_words(turn)
    return len(words & content_words(intent)) / len(words) if words else 0.0


def choices_adherence(turn: str, choices: list[str]) -> float:
    """1 unless the turn names 1–2 of the answer choices, or all of them."""
    low = turn.lower()
    hit = sum(bool(re.search(rf"\b{re.escape(c.lower())}\b", low)) for c in choices if c.strip())
    return 0.0 if (1 <= hit <= 2 or (choices and hit == len(choices))) else 1.0


def split_end(text: str) -> tuple[str, bool]:
    """``(turn, ended)``: the turn up to :data:`END_TOKEN` and whether the token was present."""
    if END_TOKEN in text:
        return text.split(END_TOKEN, 1)[0].strip(), True
    return text.strip(), False


def prism_score(overlap: float, ended: bool, is_last_turn: bool, human: bool) -> float:
    return (overlap + float(ended == is_last_turn) + float(human)) / 3


def _history(value: Any, row: Mapping[str, Any]) -> list[dict[str, str]]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: extra_info.conversation_history is not valid JSON ({err})") from None
    if not isinstance(value, list):
        raise RowError(f"{row_name(row)}: extra_info.conversation_history must be a list of messages")
    return [{"role": str(m.get("role", "user")), "content": str(m.get("content", ""))} for m in value]


def prompt(intent: str, history: list[dict[str, str]]) -> list[dict[str, str]]:
    system = (
        "You play a human user chatting with an AI assistant. What you want from this chat:\n"
        f"{intent}\n\nWrite only the user's next message, as a real person types it: short, informal, no "
        f"role label. You are the user: ask and steer, do not answer for the assistant. If you are done, end "
        f"your message with {END_TOKEN}."
    )
    if not history:
        return [{"role": "system", "content": system}, {"role": "user", "content": "Write your first message."}]
    lines = "\n".join(f"{'You' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in history)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"The conversation so far:\n{lines}\n\nWrite your next message."},
    ]


def _judge_messages(question: str, turn: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You audit chat transcripts."},
        {"role": "user", "content": f"{question}\n\nMessage:\n{turn}\n\nAnswer with JSON only."},
    ]


class UserLLMTask:
    def __init__(self, data_source: str = "userllm") -> None:
        self.data_source = data_source

    async def run(self, row: Mapping[str, Any], ctx: TaskContext, *, group_id: str, gen_uid: str) -> TaskResult:
        info = extra_info(row)
        intent = str(require(info, row, "intent"))
        history = _history(info.get("conversation_history") or [], row)
        source = str(info.get("source") or "prism")
        conv = PolicyConversation(
            ctx.policy, prompt(intent, history), ctx.enable_think, sample=f"{row_name(row)} {gen_uid}"
        )
        try:
            generated = await conv.step()
        except BudgetExhausted:
            raise RowError(
                f"{row_name(row)}: the prompt ({conv.prompt_length} tokens) leaves no room for a turn"
            ) from None
        turn, ended = split_end(said(conv, generated.text))
        sub: dict[str, float] = {"ended": float(ended)}
        score: float | None
        if source == "commonsense_qa":
            choices = require(info, row, "choices", "answer_choices")
            choices = json.loads(choices) if isinstance(choices, str) else choices
            score = choices_adherence(turn, [str(c) for c in choices])
        elif source == "natural_questions":
            q = (
                "Did the user stick to their own request and refuse what the assistant steered them toward? "
                '{"refused": <true|false>}'
            )
            verdict = await ctx.judge.judge(
                JudgeRequest(_judge_messages(q, turn), [("USER", turn)], intent, "USER"), RefusalVerdict
            )
            score = None if verdict is None else float(verdict.refused)
        else:
            q = 'Was this chat message written by a human or by an AI? {"human": <true|false>}'
            verdict = await ctx.judge.judge(
                JudgeRequest(_judge_messages(q, turn), [("USER", turn)], intent, "USER"), HumanVerdict
            )
            overlap = intent_overlap(intent, turn)
            sub.update(intent_overlap=overlap, termination=float(ended == bool(info.get("is_last_turn"))))
            score = (
                None if verdict is None else prism_score(overlap, ended, bool(info.get("is_last_turn")), verdict.human)
            )
        return finish(
            conv,
            ctx,
            row,
            data_source=self.data_source,
            prefix=PREFIX,
            group_id=group_id,
            gen_uid=gen_uid,
            score=score,
            sub=sub,
            transcript=[("user", turn)],
        )


def userllm(data_source: str) -> UserLLMTask:
    return UserLLMTask(data_source)
