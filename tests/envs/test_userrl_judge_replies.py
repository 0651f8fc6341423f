"""Judge replies read as UserRL reads them (issue 34 item 10, docs/decisions.md A86).

Each test compares the package's reading of hand-written judge replies with an independent port of UserRL's
parser: Telepathy's guess (``judgment == "Yes"``, ``feedback`` read), Search's answer (``reasoning``,
``judgment``, ``feedback`` read) and Persuade's stance (levels changed between two labels of its scale, 0 when
either is off the scale).
"""

from __future__ import annotations

import asyncio

import pytest
from test_dialogue_gyms import persuade_task

from mimesis_pl.envs.base import Action
from mimesis_pl.envs.gyms.persuade import STANCES, PersuadeGym
from mimesis_pl.envs.gyms.search.gym import answer_verdict
from mimesis_pl.envs.gyms.telepathy import guess_verdict
from mimesis_pl.envs.user_protocol import UserReply
from mimesis_pl.llm import RetryableError

USERRL_SCALE = "Strongly Agree|Agree|Partly Agree|Neutral|Partly Disagree|Disagree|Strongly Disagree".split("|")


def userrl_yes_no(reply: dict, fields: tuple[str, ...]) -> float | None:
    """UserRL's parse: a missing field raises (None here: a failed judgement); 1.0 only for exactly "Yes"."""
    if any(f not in reply for f in fields):
        return None
    return 1.0 if reply["judgment"] == "Yes" else 0.0


def userrl_persuade_rewards(labels: list[str]) -> list[float]:
    rewards, previous = [], "Strongly Agree"
    for label in labels:
        try:
            change = USERRL_SCALE.index(label) - USERRL_SCALE.index(previous)
        except ValueError:
            change = 0
        rewards.append(0.0 if change <= 0 else 1.0 if change >= 6 else round(change / 6, 6))
        previous = label
    return rewards


REPLIES = [
    {"judgment": "Yes", "feedback": "Right.", "reasoning": "r"},
    {"judgment": "yes", "feedback": "Right.", "reasoning": "r"},  # UserRL: not "Yes" -> wrong
    {"judgment": "Maybe", "feedback": "Hm.", "reasoning": "r"},  # UserRL: a wrong answer
    {"judgment": "No", "feedback": "No.", "reasoning": "r"},
    {"judgment": "Yes", "reasoning": "r"},  # no feedback: UserRL's parse fails
    {"judgment": "Yes", "feedback": "Right."},  # no reasoning: fails for Search only
]


def package_reading(read, reply) -> float | None:
    try:
        return 1.0 if (read(reply)[0] if isinstance(read(reply), tuple) else read(reply)) else 0.0
    except RetryableError:
        return None


@pytest.mark.parametrize("reply", REPLIES)
def test_guess_and_answer_verdicts_equal_userrls(reply):
    assert package_reading(guess_verdict, reply) == userrl_yes_no(reply, ("judgment", "feedback"))
    assert package_reading(answer_verdict, reply) == userrl_yes_no(reply, ("reasoning", "judgment", "feedback"))


def test_the_lenient_reading_matches_case_and_fails_unknown_labels():
    assert guess_verdict(REPLIES[1], "lenient")[0] is True
    with pytest.raises(RetryableError, match="must be one of"):
        answer_verdict(REPLIES[2], "lenient")


class StanceJudge:
    """A served judge stand-in: each ask reads the next scripted reply."""

    def __init__(self, stances):
        self.stances = list(stances)

    async def ask(self, messages, read):
        return read({"thought": "t", "stance": self.stances.pop(0)})

    async def aclose(self):
        pass


class PlainUser:
    async def reply(self, messages, *, episode_id):
        return UserReply("Hmm, I see.", "private")

    async def aclose(self):
        pass


def play_persuade(stances, **options):
    gym = PersuadeGym(user=PlainUser(), **options)
    gym.judge = StanceJudge(stances)

    async def go():
        await gym.reset(persuade_task(), episode_id="e")
        return [await gym.step(Action("answer", f"argument {i}")) for i in range(len(stances))]

    return asyncio.run(go())


@pytest.mark.parametrize(
    "stances",
    [
        ["Agree", "partly disagree", "Disagree"],  # lower case is off UserRL's scale: 0, and 0 from it
        ["Neutral", "Maybe", "Partly Disagree", "Disagree"],
        ["Agree", "Neutral", "Strongly Disagree"],
    ],
)
def test_persuade_stances_pay_as_userrl(stances):
    results = play_persuade(stances)
    assert [r.reward for r in results] == pytest.approx(userrl_persuade_rewards(stances), abs=1e-6)
    assert results[-1].done == (stances[-1] == "Strongly Disagree")


def test_persuade_lenient_reading_places_a_lower_case_label():
    results = play_persuade(["Agree", "partly disagree"], verdicts="lenient")
    assert [r.reward * 6 for r in results] == pytest.approx([1, 3]) and results[1].info["stance"] == STANCES[4]


# ------------------------------------------------------------------------------------------ Intention (A88)
def userrl_intention_reward(reply: dict, remaining_importances: list[int], penalty: float = 0.2) -> float:
    """Independent port of UserRL's parse_evaluation_response + _calculate_reward for one question."""
    indices = [int(i) for i in reply.get("covered_detail_indices", []) if str(i).isdigit()]
    if not reply.get("is_task_related", True):
        indices = []
    covered = [remaining_importances[i] for i in indices if 0 <= i < len(remaining_importances)]
    if not covered:
        return 0.0
    base = {3: 1.0, 2: 0.7, 1: 0.4}[max(covered)]
    return max(0.0, base - penalty * (len(covered) - 1)) if len(covered) > 1 else base


class CoverageJudge:
    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    async def ask(self, messages, read):
        self.seen.append(messages)
        return read(self.replies.pop(0))

    async def aclose(self):
        pass


@pytest.mark.parametrize(
    "reply",
    [
        {"analysis": "a", "is_task_related": False, "covered_detail_indices": [0]},  # UserRL: 0
        {"analysis": "a", "is_task_related": True, "covered_detail_indices": [0, 0]},  # UserRL: 1.0 - 0.2
        {"analysis": "a", "is_task_related": True, "covered_detail_indices": [1, 2]},
        {"analysis": "a", "covered_detail_indices": [0]},
    ],
)
def test_intention_judge_verdicts_pay_as_userrl(tmp_path, reply):
    import json

    from test_dialogue_gyms import DETAILS, TASK_TEXT, intention_task

    from mimesis_pl.envs.gyms.intention import IntentionGym
    from mimesis_pl.users.scripted import ScriptedUser

    path = tmp_path / "intentions.json"
    path.write_text(json.dumps([{"id": "trip-1", "task": TASK_TEXT, "missing_details": DETAILS}]))
    gym = IntentionGym(user=ScriptedUser(), details_paths=[path])
    gym.judge = CoverageJudge([reply])

    async def go():
        await gym.reset(intention_task(), episode_id="e")
        return await gym.step(Action("action", "What budget do you have?"))

    result = asyncio.run(go())
    assert result.reward == pytest.approx(userrl_intention_reward(reply, [int(d["importance"]) for d in DETAILS]))


def test_intention_judge_sees_category_recent_exchanges_and_inquiries(tmp_path):
    import json

    from test_dialogue_gyms import intention_task

    from mimesis_pl.envs.gyms.intention import IntentionGym
    from mimesis_pl.users.scripted import ScriptedUser

    details = [
        {"description": "Budget", "importance": "3", "inquiry": "What is your budget?", "options": ["Low", "High"]},
        {"description": "Group size", "importance": "1", "inquiry": "How many of you?", "options": ["1", "2"]},
    ]
    task_text = "Plan a weekend trip to the mountains."
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"id": "trip-1", "task": task_text, "missing_details": details}]))
    gym = IntentionGym(user=ScriptedUser(), details_paths=[path])
    replies = [{"is_task_related": True, "covered_detail_indices": []}] * 5
    gym.judge = CoverageJudge(replies)
    questions = [f"Question {i}?" for i in range(5)]

    async def go():
        await gym.reset(intention_task(), episode_id="e")
        return [await gym.step(Action("action", q)) for q in questions]

    results = asyncio.run(go())
    last = gym.judge.seen[-1][-1]["content"]
    assert "Category: Travel" in last and "What is your budget?" in last and "How many of you?" in last
    # the last three exchanges before the question (UserRL's conversation_history[-3:]), not older ones
    assert all(q in last for q in questions[1:4]) and questions[0] not in last.split("The assistant's question")[0]
    assert results[3].observation in last
    assert "Low" not in last and "High" not in last  # options never shown
