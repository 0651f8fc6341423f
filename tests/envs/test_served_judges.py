"""Served judges of the judged gyms (docs/decisions.md A50–A52), against a scripted judge on loopback.

Each test checks the reward of hand-worked cases and that the judge's request carries the hidden text
UserRL's judge sees and nothing more (no title/category where UserRL sends only the entity, no options
or preferences for Intention, no clue history for Telepathy). A judge that keeps failing ends the
episode as ``judge_error`` (unscored), never as a 0.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from gym_fixtures import GYM_JSON, make_row, needs_userrl, tasks
from gym_judge_server import reply, served_judge

from mimesis_pl.envs import Action, EnvironmentManager, GymTask, Termination
from mimesis_pl.envs.gyms.intention import IntentionGym, userrl_coverage_reward
from mimesis_pl.envs.gyms.judging import RULE_GRADER, grader_label, judge_settings
from mimesis_pl.envs.gyms.persuade import PersuadeGym, stance_reward
from mimesis_pl.envs.gyms.telepathy import TelepathyGym, guess_is_correct
from mimesis_pl.envs.gyms.turtle import TurtleGym
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm.replies import reply_json_object
from mimesis_pl.users.scripted import ScriptedUser

EINSTEIN = "Albert Einstein - the famous physicist known for the theory of relativity, Nobel Prize winner"


def telepathy_task() -> GymTask:
    rm = {"title": "Albert Einstein", "category": "famous_person", "ground_truth": EINSTEIN}
    row = make_row(
        "TelepathyGym",
        "I am thinking of a famous person.",
        reward_model=rm,
        create_kwargs={"title": "Albert Einstein", "category": "famous_person"},
    )
    return GymTask.from_row(row, source="telepathy-row")


def play(gym, task, actions):
    async def go():
        await gym.reset(task, episode_id="e1")
        try:
            return [await gym.step(a) for a in actions]
        finally:
            await gym.aclose()

    return go()


# ------------------------------------------------------------------------------------------ plumbing
def test_judge_settings_from_yaml_mapping_and_errors():
    assert judge_settings(None, where="x") is None
    assert judge_settings({"class_path": "ScriptedChatSettings"}, where="x") is None  # scripted = the rule grader
    s = judge_settings(
        {"class_path": "ServedChatSettings", "init_args": {"url": "http://h/v1", "model": "m", "max_tokens": 64}},
        where="x",
    )
    assert (s.model, s.max_tokens) == ("m", 64)
    with pytest.raises(ValueError, match="TelepathyGym.judge: unknown keys \\['modle'\\]"):
        TelepathyGym(judge={"class_path": "ServedChatSettings", "init_args": {"url": "http://h/v1", "modle": "m"}})
    with pytest.raises(ValueError, match="needs url"):
        judge_settings({"class_path": "ServedChatSettings"}, where="x")
    assert grader_label(None) == RULE_GRADER and "judge-x" in grader_label(s.__class__(model="judge-x"))


def test_the_userrl_reading_accepts_what_judges_write():
    def parse_json_object(text):
        return reply_json_object(text, read="userrl")

    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_object('<think>hm {"no": 1}</think>Sure: {"judgment": "Yes"} done') == {"judgment": "Yes"}
    assert parse_json_object("{'judgment': 'No', 'ok': True}") == {"judgment": "No", "ok": True}


# ------------------------------------------------------------------------------------------ Telepathy
def test_rule_grader_accepts_a_surname_for_a_person_only():
    assert guess_is_correct("Einstein", "Albert Einstein", "famous_person")
    assert guess_is_correct("It is Holmes", "Sherlock Holmes", "fictional_character")
    assert not guess_is_correct("Einstein", "Albert Einstein")  # no category: the whole name
    assert not guess_is_correct("Pie", "Apple Pie", "dessert")
    assert not guess_is_correct("Albert", "Albert Einstein", "famous_person")


def test_rule_grader_in_the_gym_matches_einstein():
    (result,) = asyncio.run(play(TelepathyGym(user=ScriptedUser()), telepathy_task(), [Action("answer", "Einstein")]))
    assert result.reward == 1.0 and result.done


def test_telepathy_served_judge_sees_entity_and_guess_only():
    def answer(messages):
        guess = messages[-1]["content"].rsplit("guess:\n", 1)[-1]
        ok = "einstein" in guess.lower()
        return reply({"thought": "t", "judgment": "Yes" if ok else "No", "feedback": "Right!" if ok else "Not it."})

    async def go():
        async with served_judge(answer) as judge:
            gym = TelepathyGym(user=ScriptedUser(), judge=judge.settings())
            results = await play(
                gym,
                telepathy_task(),
                [
                    Action("action", "Is it a scientist from Ulm?"),
                    Action("answer", "Newton"),
                    Action("answer", "Einstein"),
                ],
            )
            return judge, results

    judge, (question, wrong, right) = asyncio.run(go())
    assert len(judge.bodies) == 2  # questions go to the user simulator, not the judge
    assert (wrong.reward, wrong.done, wrong.observation) == (0.0, False, "Not it.")
    assert (right.reward, right.done, right.observation) == (1.0, True, "Right!")
    for text in judge.texts():
        assert EINSTEIN in text
        assert "Ulm" not in text and "famous_person" not in text  # no clue history, no category
    assert judge.bodies[0]["model"] == "judge-x" and judge.bodies[0]["temperature"] == 0.0


def test_judge_failure_is_an_infrastructure_failure_not_a_zero():
    calls = []

    def answer(messages):
        calls.append(1)
        return 503 if len(calls) == 1 else "I cannot judge that."  # an error, then replies that never parse

    async def go():
        async with served_judge(answer) as judge:
            manager = EnvironmentManager(users=_Users(), gym_options={"TelepathyGym": {"judge": judge.settings()}})
            row = make_row(
                "TelepathyGym",
                "I am thinking of a famous person.",
                reward_model={"title": "Albert Einstein", "category": "famous_person", "ground_truth": EINSTEIN},
                create_kwargs={"title": "Albert Einstein"},
            )
            episode = await manager.start(row, "ep-1")
            turn = await episode.step(
                '<tool_call>{"name": "interact_with_env", "arguments": {"choice": "answer", "content": "Einstein"}}'
                "</tool_call>"
            )
            return episode.summary(), turn, manager

    summary, turn, manager = asyncio.run(go())
    assert len(calls) == 3  # 1 + max_retries
    assert summary.status is Termination.JUDGE_ERROR and summary.status.is_failure
    assert "JudgeFailure" in summary.error and "TelepathyGym judge" in summary.error
    assert turn.done and manager.totals["failure/judge_error"] == 1


class _Users:
    def for_episode(self, episode_id, base_url):
        return ScriptedUser()


# ------------------------------------------------------------------------------------------ Turtle
SURFACE = "A man turned off a light and many people died."
BOTTOM = "A lighthouse keeper switched off the lamp to save fuel. A ship sank on the rocks."
CRITERIA = [
    {"statement": "He is a lighthouse keeper", "score": 0.5},
    {"statement": "He switched off the lamp", "score": 0.3},
    {"statement": "A ship sank", "score": 0.2},
]


def test_turtle_served_judge_scores_weighted_criteria(tmp_path):
    stories = tmp_path / "stories.json"
    stories.write_text(
        json.dumps({"7": {"new_title": "The Dark Lamp", "new_bottom": BOTTOM, "evaluation": CRITERIA, "x": 1}})
    )
    marks = [[1.0, 0.5, 0], [1.0, 1.0, 0], [1.0, 1.0, 1.0]]

    def answer(messages):
        return reply({"scores": [{"statement": c["statement"], "score": m} for c, m in zip(CRITERIA, marks.pop(0))]})

    async def go():
        async with served_judge(answer) as judge:
            gym = TurtleGym(user=ScriptedUser(), judge=judge.settings(), stories_path=stories)
            row = make_row(
                "TurtleGym",
                "Title: The Dark Lamp",
                reward_model={"title": "The Dark Lamp", "surface": SURFACE, "bottom": BOTTOM, "ground_truth": BOTTOM},
                create_kwargs={"title": "The Dark Lamp", "surface": SURFACE, "bottom": BOTTOM},
            )
            results = await play(gym, GymTask.from_row(row), [Action("answer", f"story {i}") for i in range(3)])
            return judge, results

    judge, (a, b, c) = asyncio.run(go())
    # scores 0.5 + 0.15 = 0.65, then 0.8, then 1.0: rewards are the improvements
    assert [r.info["score"] for r in (a, b, c)] == pytest.approx([0.65, 0.8, 1.0])
    assert [r.reward for r in (a, b, c)] == pytest.approx([0.65, 0.15, 0.2])
    assert c.done and not b.done
    assert "He is a lighthouse keeper" in a.observation and "He switched off the lamp" not in a.observation
    text = judge.texts()[0]
    assert SURFACE in text and BOTTOM in text and "story 0" in text and "A ship sank" in text
    assert '"score"' not in text.split("Evaluation protocol:")[1]  # the weights are withheld


def test_turtle_judge_needs_the_criteria_file():
    with pytest.raises(ValueError, match="stories_path"):
        TurtleGym(judge={"class_path": "ServedChatSettings", "init_args": {"url": "http://127.0.0.1:9/v1"}})


# ------------------------------------------------------------------------------------------ Intention
DETAILS = [
    {"description": "Budget for the trip", "importance": "3", "inquiry": "What is your budget?", "options": ["Low"]},
    {"description": "Accommodation", "importance": "2", "inquiry": "Where to sleep?", "options": ["Cabin"]},
    {"description": "Group size", "importance": "1", "inquiry": "How many people?", "options": ["Solo"]},
]


def test_userrl_coverage_reward_hand_worked():
    assert userrl_coverage_reward([], 0.2) == 0.0
    assert userrl_coverage_reward([2], 0.2) == pytest.approx(0.7)
    assert userrl_coverage_reward([3, 1], 0.2) == pytest.approx(0.8)
    assert userrl_coverage_reward([1, 1, 1], 0.2) == pytest.approx(0.0)


def test_intention_served_judge_and_userrl_reward(tmp_path):
    details = tmp_path / "intentions.json"
    details.write_text(json.dumps([{"id": "trip-1", "task": "Plan a trip.", "missing_details": DETAILS}]))
    covered = [[0, 2], [1]]

    def answer(messages):
        return reply({"analysis": "a", "is_task_related": True, "covered_detail_indices": covered.pop(0)})

    async def go():
        async with served_judge(answer) as judge:
            gym = IntentionGym(user=ScriptedUser(), details_paths=[details], judge=judge.settings())
            row = make_row(
                "IntentionGym",
                "The initial vague task description: Plan a trip.",
                reward_model={"id": "trip-1", "task": "Plan a trip.", "category": "Travel"},
                create_kwargs={"id": "trip-1", "task": "Plan a trip.", "category": "Travel"},
            )
            results = await play(
                gym, GymTask.from_row(row), [Action("action", "Budget and group?"), Action("action", "Where?")]
            )
            return judge, results

    judge, (first, second) = asyncio.run(go())
    assert first.reward == pytest.approx(0.8) and first.info["covered"] == [0, 2]
    # UserRL would pay 0.7 (sum 1.5); the episode sum is capped at 1 (A51)
    assert second.reward == pytest.approx(0.2) and second.info["reward_clipped"] == pytest.approx(0.7)
    assert second.done
    one, two = judge.texts()
    assert "What is your budget?" in one and "Group size" in one and "Budget and group?" in one
    assert "Group size" not in two and "Accommodation" in two  # only the uncovered details
    # no options / preferences in what the judge is told about the details; the previous exchange (the user's
    # public reply, as UserRL's judge sees its last three exchanges, A88) may name what the user said
    for text in (one, two.split("Missing details not yet covered")[1]):
        assert "Low" not in text and "Cabin" not in text and "Solo" not in text
    assert "Budget and group?" in two.split("Missing details not yet covered")[0]


def test_intention_judge_index_outside_the_uncovered_is_retried_then_fails(tmp_path):
    details = tmp_path / "intentions.json"
    details.write_text(json.dumps([{"id": "trip-1", "task": "Plan a trip.", "missing_details": DETAILS}]))

    async def go():
        async with served_judge(lambda m: reply({"covered_detail_indices": [7]})) as judge:
            gym = IntentionGym(user=ScriptedUser(), details_paths=[details], judge=judge.settings())
            row = make_row("IntentionGym", "x", reward_model={"id": "trip-1", "task": "Plan a trip."}, create_kwargs={})
            with pytest.raises(JudgeFailure, match="failed after 3 attempts.*index 7"):
                await play(gym, GymTask.from_row(row), [Action("action", "Budget?")])
            return judge

    assert len(asyncio.run(go()).bodies) == 3


# ------------------------------------------------------------------------------------------ Persuade
def test_stance_rewards_hand_worked():
    # previous Agree (1) -> Neutral (3), best so far Partly Agree (2)
    assert stance_reward(1, 2, 3, "userrl") == pytest.approx(2 / 6)
    assert stance_reward(1, 2, 3, "progress") == pytest.approx(1 / 6)
    assert stance_reward(3, 3, 1, "userrl") == 0.0


def test_persuade_served_judge_gives_the_stance_userrl_reward():
    stances = ["Partly Agree", "Agree", "Neutral"]

    def answer(messages):
        return reply({"thought": "t", "stance": stances.pop(0)})

    async def go():
        async with served_judge(answer) as judge:
            gym = PersuadeGym(user=ScriptedUser(), judge=judge.settings())
            claim, argument = "Cities should keep funding libraries", "Libraries give poorer families free books."
            row = make_row(
                "PersuadeGym",
                f"Claim: {claim}",
                reward_model={"id": "p1", "claim": claim, "argument": argument},
                create_kwargs={"id": "p1", "claim": claim, "argument": argument},
            )
            results = await play(gym, GymTask.from_row(row), [Action("answer", f"argument {i}") for i in range(3)])
            return judge, results

    judge, results = asyncio.run(go())
    assert [r.reward * 6 for r in results] == pytest.approx([2, 0, 2])  # UserRL: against the previous stance
    assert [r.info["stance"] for r in results] == ["Partly Agree", "Agree", "Neutral"]
    assert "Stance:" in results[0].observation  # the user simulator still writes the reply
    last = judge.texts()[2]
    assert "Libraries give poorer families free books." in last and "argument 2" in last
    assert "argument 0" in last and "Your stance so far: Agree" in last


def test_reports_name_each_gyms_grader():
    from mimesis_pl.envs.gyms.function import FunctionGym
    from mimesis_pl.envs.gyms.judging import RULE_ONLY, gym_graders

    options = {
        "TelepathyGym": {
            "judge": {"class_path": "ServedChatSettings", "init_args": {"url": "http://h/v1", "model": "qwen-judge"}}
        }
    }
    graders = gym_graders({"telepathy": TelepathyGym, "turtle": TurtleGym, "function": FunctionGym}, options)
    assert graders == {
        "telepathy": "LLM judge qwen-judge (UserRL's judging)",
        "turtle": RULE_GRADER,
        "function": RULE_ONLY,
    }
    assert "offline default" in RULE_GRADER and "not comparable" in RULE_GRADER


@needs_userrl
def test_userrl_files_supply_what_the_judges_need():
    """Every Turtle test row's title has weighted criteria in UserRL's stories file; the intention files carry
    the example inquiries the coverage judge is shown."""
    from mimesis_pl.envs.gyms.intention import load_details
    from mimesis_pl.envs.gyms.turtle import load_criteria

    criteria = load_criteria(str(GYM_JSON / "TurtleGym" / "turtlegym" / "data" / "all_stories_refined.json"))
    for task in tasks("TurtleGym"):
        found = criteria[task.hidden["title"].strip().lower()]
        assert found and sum(c.weight for c in found) == pytest.approx(1.0, abs=0.02)
    details = load_details([GYM_JSON / "IntentionGym" / "intentiongym" / "data" / "all_intentions_test.json"])
    assert all(d.inquiry for ds in details.values() for d in ds)
