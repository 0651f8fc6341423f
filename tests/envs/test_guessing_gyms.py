"""TelepathyGym and TurtleGym: judging, graded answers, rewards, scripted answers, hidden data."""

from __future__ import annotations

import asyncio
import json

import pytest
from gym_fixtures import contains_words, make_row

from mimesis_pl.envs import Action, GymTask, TaskDataError
from mimesis_pl.envs.gyms.telepathy import TelepathyGym, guess_is_correct
from mimesis_pl.envs.gyms.turtle import TurtleGym, grade_story, story_facts
from mimesis_pl.users.scripted import ScriptedUser

KIWI = "Kiwi - a small, brown, fuzzy fruit with bright green flesh and tiny black seeds, high in vitamin C."
STORY = (
    "A lighthouse keeper switched off the lamp to save fuel during a storm. "
    "A passenger ship lost its way and sank on the rocks near the island. "
    "The keeper later found the drowned sailors on the beach and never forgave himself."
)


def telepathy_task(description: str | None = KIWI) -> GymTask:
    rm = {"title": "Kiwi", "category": "food"} | ({"ground_truth": description} if description else {})
    row = make_row(
        "TelepathyGym",
        "I am thinking of a fruit.",
        reward_model=rm,
        create_kwargs={"title": "Kiwi", "category": "food"},
    )
    return GymTask.from_row(row, source="telepathy-row")


def turtle_task() -> GymTask:
    kwargs = {"title": "The Dark Lamp", "surface": "A man turned off a light and many people died.", "bottom": STORY}
    row = make_row(
        "TurtleGym",
        "Title: The Dark Lamp\nSurface: A man turned off a light...",
        reward_model=dict(kwargs, ground_truth=STORY),
        create_kwargs=kwargs,
    )
    return GymTask.from_row(row, source="turtle-row")


def run(gym, task, *actions):
    async def go():
        await gym.reset(task, episode_id="e1")
        return [await gym.step(a) for a in actions]

    return asyncio.run(go())


# ------------------------------------------------------------------------------------------ Telepathy
def test_guess_judge():
    assert guess_is_correct("a kiwi fruit", "Kiwi")
    assert guess_is_correct("Albert Einstein!", "Albert Einstein")
    assert not guess_is_correct("Einstein", "Albert Einstein")
    assert guess_is_correct("Great Wall, China", "The Great Wall of China")
    assert not guess_is_correct("mango", "Kiwi")


def test_telepathy_questions_wrong_and_right_guesses():
    gym = TelepathyGym(user=ScriptedUser())
    fuzzy, red, chat, wrong, right = run(
        gym,
        telepathy_task(),
        Action("action", "Is it fuzzy?"),
        Action("action", "Is it red?"),
        Action("action", "What is it?"),
        Action("answer", "Mango"),
        Action("answer", "It is a kiwi"),
    )
    assert [fuzzy.observation, red.observation] == ["Yes.", "No."]
    assert chat.observation == "I can only answer yes-or-no questions."
    assert (wrong.reward, wrong.done) == (0.0, False) and "Kiwi" not in wrong.observation
    assert (right.reward, right.done) == (1.0, True)
    assert gym.total_reward == 1.0
    # The scripted user's reasoning names the hidden description; it travels in info, not the observation.
    assert KIWI in fuzzy.info["user"].reasoning
    for r in (fuzzy, red, chat, wrong):
        assert not contains_words(r.observation, "bright green flesh")


def test_telepathy_reads_the_entities_file_when_the_row_has_no_description(tmp_path):
    with pytest.raises(TaskDataError, match="telepathy-row.*Kiwi"):
        run(TelepathyGym(user=ScriptedUser()), telepathy_task(description=None))
    path = tmp_path / "entities.json"
    path.write_text(json.dumps([{"id": "e1", "title": "Kiwi", "target_entity": KIWI}]))
    (fuzzy,) = run(
        TelepathyGym(user=ScriptedUser(), entities_path=path),
        telepathy_task(description=None),
        Action("action", "Is it fuzzy?"),
    )
    assert fuzzy.observation == "Yes."


def test_telepathy_requires_a_user():
    with pytest.raises(ValueError, match="needs a user"):
        run(TelepathyGym(), telepathy_task())


# ------------------------------------------------------------------------------------------ Turtle
def test_story_facts_and_grading():
    facts = story_facts(STORY)
    assert len(facts) == 3
    assert grade_story(STORY, facts) == (1.0, 3)
    assert grade_story("Quantum zebras juggle marmalade.", facts) == (0.0, 0)
    score, full = grade_story(" ".join(STORY.split(". ")[:1]), facts)
    assert full == 1 and 1 / 3 <= score < 1.0


def test_turtle_reward_is_improvement_over_the_best_answer():
    gym = TurtleGym(user=ScriptedUser())
    first_sentence = STORY.split(". ")[0] + "."
    wrong, partial, same, full = run(
        gym,
        turtle_task(),
        Action("answer", "Quantum zebras juggle marmalade."),
        Action("answer", first_sentence),
        Action("answer", first_sentence),
        Action("answer", STORY),
    )
    assert (wrong.reward, wrong.done) == (0.0, False)
    assert 0.0 < partial.reward < 1.0 and not partial.done
    assert same.reward == 0.0
    assert full.done and full.reward == pytest.approx(1.0 - partial.reward)
    assert gym.total_reward == pytest.approx(1.0)
    for r in (wrong, partial, same, full):
        assert not contains_words(r.observation, "passenger ship lost its way")


def test_turtle_scripted_host_answers_from_the_hidden_story():
    gym = TurtleGym(user=ScriptedUser())
    storm, cat, nothing = run(
        gym,
        turtle_task(),
        Action("action", "Was there a storm and a ship?"),
        Action("action", "Did a cat do it?"),
        Action("action", "Why?"),
    )
    assert (storm.observation, cat.observation, nothing.observation) == (
        "Yes.",
        "No.",
        "I can only answer yes-or-no questions.",
    )
    assert STORY in storm.info["user"].reasoning
    assert all(r.reward == 0.0 for r in (storm, cat, nothing))


def test_turtle_threshold_is_validated():
    with pytest.raises(ValueError):
        TurtleGym(user=ScriptedUser(), success_threshold=0.0)
