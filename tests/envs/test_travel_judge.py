"""TravelGym's served judge against a scripted loopback judge: what each request carries (what UserRL's judge
sees and nothing more), hand-worked rewards, and a failing judge as judge_error (docs/decisions.md A43, A48)."""

from __future__ import annotations

import asyncio
import json

import pytest
from gym_judge_server import reply, served_judge
from test_travel_gym import TASK_ID, scenario_record, travel_row

from mimesis_pl.envs import Action, EnvironmentManager, GymTask, Termination
from mimesis_pl.envs.gyms.travel import TravelGym
from mimesis_pl.envs.gyms.travel.judge import SEARCH_SYSTEM, read_alignment, read_type
from mimesis_pl.envs.gyms.travel.scenarios import scenario_from_record
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.llm import RetryableError
from mimesis_pl.users.scripted import ScriptedUser

# Hidden text UserRL's judges never see: implicit statements, subcategories, option ids and fields, best ids.
IMPLICIT = ("Mornings are hard without food on site.", "Comfortable but not over the top.", "I never learned a clutch.")
NEVER = ("star rating", "transmission", "H1", "H2", "H5", "H9", "C1", "C3", "C4", "price", "best_id", "correct_ids")


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "travelgym_data_21.json"
    path.write_text(json.dumps({TASK_ID: scenario_record()}))
    return path


def scripted_judge(messages):
    """Aligns a search naming the hotel and Paris; types "breakfast" as P1, "anything" as vague, else small talk."""
    asked = messages[-1]["content"]
    if messages[0]["content"] == SEARCH_SYSTEM:
        request = asked.rsplit("search request:\n", 1)[-1].lower()
        ok = "hotel" in request and "paris" in request
        return reply({"thought": "t", "alignment_judgement": "True" if ok else "False", "alignment_aspect": "Hotel"})
    latest = asked.split("latest utterance:\n", 1)[1].split("\n\n", 1)[0].lower()
    if "breakfast" in latest:
        return reply({"thought": "t", "type": "2", "preference_id": "P1"})
    return reply({"thought": "t", "type": 4 if "anything" in latest else 1, "preference_id": ""})


def test_served_judge_rewards_and_what_each_request_carries(scenario_file):
    moves = [
        ("search", '{"aspect": "hotel", "city": "Paris"}'),  # aligned hotel: 0.2
        ("search", "hotels in Lyon"),  # False: 0
        ("action", "Is breakfast important to you?"),  # type 2, P1: 0.6
        ("action", "Anything else?"),  # type 4: canned, 0
        ("answer", "H2"),  # best hotel: 1.0 (answers are not judged)
        ("answer", "C4"),  # correct car, not best: 0.8; every aspect chosen -> done
    ]

    async def go():
        async with served_judge(scripted_judge) as judge:
            gym = TravelGym(
                user=ScriptedUser(),
                scenarios_path=scenario_file,
                search_correct_reward=0.2,
                preference_correct_reward=0.6,
                judge=judge.settings(),
            )
            await gym.reset(GymTask.from_row(travel_row()), episode_id="ep")
            results = [await gym.step(Action(c, t)) for c, t in moves]
            await gym.aclose()
            return judge, results

    judge, results = asyncio.run(go())
    assert [r.reward for r in results] == pytest.approx([0.2, 0.0, 0.6, 0.0, 1.0, 0.8])
    assert [r.done for r in results] == [False] * 5 + [True]
    assert "Here are all the options for <hotel>" in results[0].observation
    assert results[2].info["elicited"] == "P1" and results[3].info["utterance_type"] == 4
    assert len(judge.bodies) == 4  # two searches, two utterances; answers go by UserRL's id rule
    search_one, search_two, talk_one, talk_two = judge.texts()
    for text in (search_one, search_two):  # the request and the ground-truth arguments, nothing else
        assert '"city": "Paris"' in text and '"pickup": "Paris"' in text
        assert "Breakfast included." not in text and "A couple visits Paris" not in text
    assert "hotels in Lyon" in search_two and "hotels in Lyon" not in search_one
    # the scenario, the history (search results cut to their first line), the utterance, the hidden preferences
    assert "A couple visits Paris for a week." in talk_one and "hotels in Lyon" in talk_one
    assert "P1 (aspect: hotel): Breakfast included." in talk_one and "P3 (aspect: rental_car): Automatic." in talk_one
    assert "Breakfast included." not in talk_two  # elicited: no longer listed
    assert "Note: Asked concretely about preference P1" in talk_two
    assert IMPLICIT[0] in talk_two  # the traveller's public reply is history, as UserRL's judge reads it
    for text in judge.texts():
        assert not any(s in text for s in IMPLICIT[1:]) and not any(s in text for s in NEVER), text
    assert IMPLICIT[0] not in talk_one and '"pickup"' not in talk_one  # no arguments for the utterance judge


class _Users:
    def for_episode(self, episode_id, base_url):
        return ScriptedUser()


def test_a_judge_naming_no_hidden_preference_is_judge_error_not_a_zero(scenario_file):
    async def go():
        async with served_judge(lambda m: reply({"type": "2", "preference_id": "P7"})) as judge:
            options = {"TravelGym": {"judge": judge.settings(), "scenarios_path": str(scenario_file)}}
            manager = EnvironmentManager(users=_Users(), gym_options=options)
            episode = await manager.start(travel_row(), "ep-1")
            turn = await episode.step(action_to_tool_call(Action("action", "Is breakfast important?")))
            return judge, episode.summary(), turn, manager

    judge, summary, turn, manager = asyncio.run(go())
    assert len(judge.bodies) == 3  # 1 + max_retries
    assert summary.status is Termination.JUDGE_ERROR and summary.status.is_failure
    assert "JudgeFailure" in summary.error and "TravelGym judge" in summary.error and "'P7'" in summary.error
    assert turn.done and manager.totals["failure/judge_error"] == 1


def test_reading_the_judges_verdicts():
    scenario = scenario_from_record(TASK_ID, scenario_record(), where="x")
    prefs = list(scenario.preferences)
    assert read_alignment({"alignment_judgement": "true", "alignment_aspect": "Car Rental"}, scenario) == (
        "True",
        "rental_car",
    )
    assert read_alignment({"alignment_judgement": "N/A"}, scenario) == ("N/A", None)
    with pytest.raises(RetryableError, match="'flight', not an aspect"):
        read_alignment({"alignment_judgement": "True", "alignment_aspect": "flight"}, scenario)
    assert read_type({"type": 3}, prefs) == (3, None)
    assert read_type({"type": "2", "preference_id": " P2 "}, prefs) == (2, prefs[1])
    with pytest.raises(RetryableError, match="'P1', not one of"):
        read_type({"type": 2, "preference_id": "P1"}, prefs[1:])
    with pytest.raises(RetryableError, match="must be 1, 2, 3 or 4"):
        read_type({"type": True}, prefs)


def test_a_served_judge_setting_needs_a_url():
    with pytest.raises(ValueError, match="TravelGym.judge: ServedChatSettings needs url"):
        TravelGym(judge={"class_path": "ServedChatSettings", "init_args": {"model": "m"}})
    with pytest.raises(ValueError, match="unknown keys"):
        TravelGym(judge={"class_path": "ServedChatSettings", "init_args": {"url": "http://h/v1", "modle": "m"}})
