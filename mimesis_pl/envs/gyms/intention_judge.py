"""IntentionGym's served coverage judge: what it is shown and how its reply is read (A52, A88).

UserRL's evaluation prompt shows its judge the task, its category, the last three exchanges (question and
reply) and each uncovered detail with its importance and example inquiry; never the options or the user's
preferences. Its parser drops every index when ``is_task_related`` is false and keeps a repeated index, so a
question judged to cover ``[0, 0]`` pays the two-detail penalty (``verdicts="userrl"``, the default);
``verdicts="lenient"`` ignores ``is_task_related`` and counts a repeated index once (our earlier reading).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mimesis_pl.envs.gyms.judging import VerdictReading, chat, field_of
from mimesis_pl.llm import RetryableError

# UserRL's judge sees the last three exchanges (prompts.py ``conversation_history[-3:]``).
RECENT_EXCHANGES = 3

JUDGE_SYSTEM = (
    "You judge which missing details of a user's vague request an assistant's latest question asks about. "
    "A detail counts as covered only when the question clearly and specifically asks for it; a vague or "
    "off-topic question covers nothing.\n"
    'Reply with a JSON object: {"analysis": "<your reasoning>", "is_task_related": true | false, '
    '"covered_detail_indices": [<indices of the listed details that the question covers>]}'
)


class Detail(Protocol):
    description: str
    importance: int
    inquiry: str


def judge_coverage_messages(
    task: str,
    question: str,
    details: Sequence[Detail],
    remaining: Sequence[int],
    *,
    category: str = "",
    exchanges: Sequence[tuple[str, str]] = (),
) -> list[dict[str, str]]:
    """What UserRL's coverage judge sees: the task and its category, the last three exchanges, the question,
    and the uncovered details (index, description, importance, example inquiry) — never their options or
    the user's preferences."""
    listed = [
        {"index": i, "description": details[i].description, "importance": details[i].importance}
        | ({"example_inquiry": details[i].inquiry} if details[i].inquiry else {})
        for i in remaining
    ]
    recent = [{"question": q, "reply": a} for q, a in list(exchanges)[-RECENT_EXCHANGES:]]
    user = (
        f"Vague request:\n{task}\n\nCategory: {category or 'General'}\n\n"
        f"Previous exchanges (latest last):\n{json.dumps(recent, ensure_ascii=False, indent=1) if recent else 'None'}"
        f"\n\nMissing details not yet covered:\n{json.dumps(listed, ensure_ascii=False, indent=1)}\n\n"
        f"The assistant's question:\n{question.strip()}"
    )
    return chat(JUDGE_SYSTEM, user)


def judged_indices(data: Mapping[str, Any], remaining: Sequence[int], reading: VerdictReading = "userrl") -> list[int]:
    """The judge's covered indices, each one of ``remaining`` (others are retried), in order.

    ``userrl``: none when ``is_task_related`` is false, a repeated index kept (it counts again in the
    penalty, as UserRL's list does); ``lenient``: ``is_task_related`` ignored, repeats dropped.
    """
    raw = field_of(data, "covered_detail_indices")
    if not isinstance(raw, list):
        raise RetryableError("judge field 'covered_detail_indices' must be a list")
    out: list[int] = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
            raise RetryableError(f"judge gave a non-integer detail index {str(value)[:20]!r}")
        index = int(value)
        if index not in remaining:
            raise RetryableError(f"judge gave detail index {index}, not one of the uncovered {list(remaining)}")
        if reading == "userrl" or index not in out:
            out.append(index)
    if reading == "userrl" and data.get("is_task_related", True) is False:
        return []
    return out
