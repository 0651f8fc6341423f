"""IntentionGym and PersuadeGym: coverage and stance rewards, bounds, scripted replies, hidden data."""

from __future__ import annotations

import asyncio
import json

import pytest
from gym_fixtures import make_row

from mimesis_pl.envs import Action, GymTask, TaskDataError
from mimesis_pl.envs.gyms.intention import IntentionGym, preferred_option
from mimesis_pl.envs.gyms.persuade import STANCES, PersuadeGym, parse_stance
from mimesis_pl.envs.user_protocol import UserReply
from mimesis_pl.users.scripted import ScriptedUser

TASK_TEXT = "Plan a weekend trip to the mountains."
DETAILS = [
    {"description": "Budget for the trip", "importance": "3", "options": ["Under $500", "Around $1000", "Luxury"]},
    {"description": "Preferred accommodation", "importance": "2", "options": ["Camping", "Hotel", "Cabin"]},
    {"description": "Group size", "importance": "1", "options": ["Solo", "Couple", "Family"]},
]
ARGUMENT = (
    "Public libraries preserve knowledge for everyone. "
    "They give poorer families free access to books, computers and quiet study space. "
    "Librarians guide readers toward reliable information instead of rumours. "
    "Closing them would widen inequality across whole neighbourhoods."
)
CLAIM = "Cities should keep funding public libraries"


@pytest.fixture()
def details_file(tmp_path):
    path = tmp_path / "intentions.json"
    path.write_text(json.dumps([{"id": "trip-1", "task": TASK_TEXT, "missing_details": DETAILS}]))
    return path


def intention_task(task_id: str = "trip-1") -> GymTask:
    kwargs = {"id": task_id, "task": TASK_TEXT, "category": "Travel"}
    row = make_row(
        "IntentionGym",
        f"The initial vague task description: {TASK_TEXT}",
        reward_model=dict(kwargs),
        create_kwargs=kwargs,
    )
    return GymTask.from_row(row, source="intention-row")


def persuade_task() -> GymTask:
    kwargs = {"id": "lib-1", "claim": CLAIM, "argument": ARGUMENT}
    row = make_row(
        "PersuadeGym",
        f"Claim that you oppose but the environment holds: {CLAIM}",
        reward_model=dict(kwargs),
        create_kwargs=kwargs,
    )
    return GymTask.from_row(row, source="persuade-row")


def run(gym, task, *actions):
    async def go():
        await gym.reset(task, episode_id="e1")
        return [await gym.step(a) for a in actions]

    return asyncio.run(go())


# ------------------------------------------------------------------------------------------ Intention
W = {3: 1.0, 2: 0.7, 1: 0.4}
TOTAL = W[3] + W[2] + W[1]


def test_intention_rewards_follow_importance_and_penalise_bundling(details_file):
    gym = IntentionGym(user=ScriptedUser(), details_paths=[details_file], reward_rule="share")
    offtopic, budget, bundled = run(
        gym,
        intention_task(),
        Action("action", "Do you like the colour blue?"),
        Action("action", "What budget do you have in mind?"),
        Action("action", "Where would you sleep — a hotel or camping — and how big is your group?"),
    )
    assert (offtopic.reward, offtopic.observation) == (0.0, "I don't have a particular preference about that.")
    assert budget.reward == pytest.approx(W[3] / TOTAL)
    assert (
        budget.observation == f"About the budget for the trip: {preferred_option('trip-1', 0, DETAILS[0]['options'])}."
    )
    assert bundled.reward == pytest.approx((W[2] + W[1]) / TOTAL * 0.8)
    assert bundled.done and gym.total_reward < 1.0
    assert "importance" not in (offtopic.observation + budget.observation + bundled.observation).lower()


def test_intention_one_detail_per_question_scores_exactly_one(details_file):
    gym = IntentionGym(user=ScriptedUser(), details_paths=[details_file], reward_rule="share")
    results = run(
        gym,
        intention_task(),
        Action("action", "Could you tell me your budget?"),
        Action("action", "What kind of accommodation would you like, a cabin perhaps?"),
        Action("action", "Could you tell me the group size?"),
    )
    assert [r.done for r in results] == [False, False, True]
    assert sum(r.reward for r in results) == pytest.approx(1.0)
    assert all(0.0 < r.reward <= 1.0 for r in results)


def test_asking_an_already_covered_detail_again_earns_nothing(details_file):
    gym = IntentionGym(user=ScriptedUser(), details_paths=[details_file])
    first, again = run(
        gym, intention_task(), Action("action", "What is your budget?"), Action("action", "And the budget, once more?")
    )
    assert first.reward > 0 and again.reward == 0.0
    assert again.observation == "I don't have a particular preference about that."


def test_intention_unknown_id_names_row_and_files(details_file):
    with pytest.raises(TaskDataError, match="intention-row.*trip-2"):
        run(IntentionGym(user=ScriptedUser(), details_paths=[details_file]), intention_task("trip-2"))


def test_intention_bundled_details_cover_the_userrl_rows():
    gym = IntentionGym(user=ScriptedUser())
    assert gym.details_paths[0].name == "intention_details.json"


# ------------------------------------------------------------------------------------------ Persuade
def test_parse_stance():
    assert parse_stance("Fine.\nStance: Strongly Disagree") == "Strongly Disagree"
    assert parse_stance("stance - partly agree.") == "Partly Agree"
    assert parse_stance("**Stance:** Neutral") == "Neutral"
    assert parse_stance("Stance: Agree\nOn reflection... Stance: Disagree") == "Disagree"
    assert parse_stance("I am not sure.") is None
    assert parse_stance("Stance: Maybe") is None


class ScriptedStances:
    """A user that replies with a fixed list of stance labels (None: no stance line)."""

    def __init__(self, labels):
        self.labels = list(labels)

    async def reply(self, messages, *, episode_id):
        label = self.labels.pop(0)
        return UserReply("Hmm." + (f"\nStance: {label}" if label else ""), "private")

    async def aclose(self):
        pass


def test_persuade_pays_only_progress_beyond_the_best_stance():
    stances = ["Agree", "Strongly Agree", "Agree", None, "Neutral", "Strongly Disagree"]
    gym = PersuadeGym(user=ScriptedStances(stances), reward_rule="progress")
    results = run(gym, persuade_task(), *[Action("answer", f"argument {i}") for i in range(6)])
    assert [r.reward * 6 for r in results] == pytest.approx([1, 0, 0, 0, 2, 3])
    assert results[3].info["stance_unparsed"] == 1 and results[3].info["stance"] == "Agree"
    assert results[-1].done and gym.total_reward == pytest.approx(1.0)
    assert all(0.0 <= r.reward <= 1.0 for r in results)


def test_persuade_scripted_user_moves_only_on_its_own_reasons():
    gym = PersuadeGym(user=ScriptedUser())
    generic, targeted = run(
        gym,
        persuade_task(),
        Action("answer", "I disagree; that is simply wrong."),
        Action("answer", "Poorer families have other free access to books, computers and study space today."),
    )
    assert generic.reward == 0.0 and generic.observation.endswith("Stance: Strongly Agree")
    assert "you have not answered my point about" in generic.observation
    assert targeted.reward > 0.0 and parse_stance(targeted.observation) != "Strongly Agree"
    for r in (generic, targeted):
        assert ARGUMENT not in r.observation and "Librarians guide readers" not in r.observation
        assert ARGUMENT in r.info["user"].reasoning
    assert STANCES.index(parse_stance(targeted.observation)) * 1 / 6 == pytest.approx(targeted.reward)


# ------------------------------------------------------------------------------------------ off-prompt choices (A87)
def test_off_prompt_choices_are_read_as_the_offered_one_as_userrl(details_file):
    """UserRL's Intention reads any prefix as a question and Persuade any as an argument: the same episode
    played with the off-prompt choice gives the same rewards; ``refuse`` keeps only the offered choice."""
    from mimesis_pl.envs import EnvironmentManager
    from mimesis_pl.envs.tool import action_to_tool_call

    questions = ["What budget do you have in mind?", "Where would you sleep, a hotel or a cabin?"]

    def intention_rewards(choice, **options):
        gym = IntentionGym(user=ScriptedUser(), details_paths=[details_file], **options)
        return [r.reward for r in run(gym, intention_task(), *[Action(choice, q) for q in questions])]

    assert intention_rewards("answer") == intention_rewards("search") == intention_rewards("action")
    stances = ["Agree", "Neutral"]

    def persuade_rewards(choice):
        gym = PersuadeGym(user=ScriptedStances(stances))
        return [r.reward for r in run(gym, persuade_task(), *[Action(choice, f"arg {i}") for i in range(2)])]

    assert persuade_rewards("action") == persuade_rewards("answer") == pytest.approx([1 / 6, 2 / 6])
    with pytest.raises(ValueError, match="choice='answer' is not supported"):
        intention_rewards("answer", off_prompt_choices="refuse")
    # through the manager a tool call with the off-prompt choice is played, not an error turn
    manager = EnvironmentManager(users=ScriptedUser(), gym_options={"IntentionGym": {"details_paths": [details_file]}})

    async def go():
        episode = await manager.start(intention_task(), "e")
        return await episode.step(action_to_tool_call(Action("answer", questions[0])))

    assert asyncio.run(go()).reward == pytest.approx(intention_rewards("action")[0])
