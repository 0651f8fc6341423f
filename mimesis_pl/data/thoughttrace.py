"""Stage 2 — ThoughtTrace SFT: the simulator writes ``<think>why</think>`` then the human's utterance.

Each record is a human–AI conversation in which the human annotated their own turns with
``reasons`` (and the AI turns with ``reactions``). The human's turns become the trained role with the
reasons as private reasoning; the AI's turns become context; the user's profile and goal go into the
system prompt.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .chat_sft import BadSample, ChatSFTDataModule, Conversation, iter_jsonl_records
from .truncation import LengthLimits

DEFAULT_GREETING = "Hi! How can I help you today?"

_INTRO = (
    "You are role-playing a real person who is chatting with an AI assistant. Stay in character as that "
    "person for the whole conversation. Write only your own next message, in the first person, the way this "
    "person would actually type it — one turn at a time."
)
_OUTRO = (
    "Before each message, think privately about what you want, what you already know and what bothers you, "
    "then send the message."
)
_PROFILE_FIELDS = (
    ("age", "Age"),
    ("gender", "Gender"),
    ("education", "Education"),
    ("occupation", "Occupation"),
    ("frequency", "AI-usage frequency"),
    ("purposes", "Typical uses"),
)


def build_system_prompt(record: dict[str, Any]) -> str:
    """The simulator's system prompt: intro, goal, expectations, profile, and how to think."""
    parts = [_INTRO]
    summary = str(record.get("task_summary") or "").strip()
    if summary:
        parts.append(f"\nYour goal:\n{summary}")
    expectation = str(record.get("task_expectation") or "").strip()
    if expectation:
        parts.append(f"\nWhat you expect from the assistant:\n{expectation}")
    answers = record.get("survey_answers")
    if isinstance(answers, list) and answers and isinstance(answers[0], dict):
        bits = []
        for key, label in _PROFILE_FIELDS:
            value = answers[0].get(key)
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value if str(v).strip())
            if value is not None and str(value).strip():
                bits.append(f"{label}: {str(value).strip()}")
        if bits:
            parts.append("\nAbout you:\n- " + "\n- ".join(bits))
    parts.append("\n" + _OUTRO)
    return "\n".join(parts)


def _contents(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [
        str(it.get("content")).strip() for it in items if isinstance(it, dict) and str(it.get("content") or "").strip()
    ]


def build_messages(
    record: dict[str, Any], greeting: str | None = DEFAULT_GREETING, include_reactions: bool = False, where: str = ""
) -> list[dict[str, str]] | BadSample:
    """Turn one record into chat messages, or a :class:`BadSample` saying why it cannot be used."""
    source = record.get("messages")
    if not isinstance(source, list) or not source:
        return BadSample(f"{where}: field 'messages' must be a non-empty list", reason="no_messages")
    for k, m in enumerate(source):
        want = "user" if k % 2 == 0 else "assistant"
        kind = m.get("type") if isinstance(m, dict) else None
        if kind != want:
            return BadSample(
                f"{where}: messages[{k}].type is {kind!r}, expected {want!r} (conversations must strictly alternate, "
                "starting with the human)",
                reason="not_alternating",
            )
    out: list[dict[str, str]] = [{"role": "system", "content": build_system_prompt(record)}]
    if greeting:
        out.append({"role": "user", "content": greeting})
    pending: list[str] = []
    for k, m in enumerate(source):
        content = str(m.get("content") or "").strip()
        if not content:
            # An empty turn would break the alternation the model is trained on: reject the record.
            return BadSample(f"{where}: messages[{k}].content is empty", reason="empty_turn")
        if m["type"] == "assistant":
            out.append({"role": "user", "content": content})
            pending = _contents(m.get("reactions")) if include_reactions else []
        else:
            thought = "\n\n".join(pending + _contents(m.get("reasons")))
            pending = []
            out.append({"role": "assistant", "content": f"<think>\n{thought}\n</think>\n\n{content}"})
    return out


class ThoughtTraceDataModule(ChatSFTDataModule):
    """ThoughtTrace JSONL → system prompt + greeting + human turns with ``<think>`` reasons.

    Args:
        files: JSONL paths or globs.
        greeting: the AI's opening line that starts every conversation (``None`` for none).
        include_reactions: fold the human's reactions to the previous AI reply into the next reasoning.
        **kwargs: see :class:`ChatSFTDataModule` (thinking template on; max length 32768).
    """

    def __init__(
        self,
        files: list[str],
        greeting: str | None = DEFAULT_GREETING,
        include_reactions: bool = False,
        enable_thinking: bool | None = True,
        limits: LengthLimits = LengthLimits(None, None, 32768, "error"),
        **kwargs: Any,
    ) -> None:
        super().__init__(enable_thinking=enable_thinking, limits=limits, **kwargs)
        self.files = list(files)
        self.greeting = greeting
        self.include_reactions = include_reactions

    def iter_conversations(self) -> Iterator[Conversation | BadSample]:
        for where, record in iter_jsonl_records(self.files):
            if isinstance(record, BadSample):
                yield record
                continue
            messages = build_messages(record, self.greeting, self.include_reactions, where)
            yield messages if isinstance(messages, BadSample) else Conversation(sample_id=where, messages=messages)
