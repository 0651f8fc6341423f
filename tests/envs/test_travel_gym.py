"""TravelGym: UserRL's scenario format, the id-driven generator, hand-worked rewards, the scripted traveller."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from gym_fixtures import PARQUET, make_row, needs_userrl

from mimesis_pl.envs import EnvironmentManager, GymTask, TaskDataError, Termination, read_gym_tasks
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.gyms.travel import TravelGym
from mimesis_pl.envs.gyms.travel.generator import generate_scenario
from mimesis_pl.envs.gyms.travel.grader import aspects_named, search_alignment, utterance_type
from mimesis_pl.envs.gyms.travel.scenarios import parse_best_ids, parse_task_id, scenario_from_record, variant_of
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.users.scripted import ScriptedUser

REPO = Path(__file__).resolve().parents[2]
TASK_ID = "hotel:2-7|rental_car:1-3"


def scenario_record() -> dict:
    """A hand-written scenario in UserRL's file format (two hotel preferences, one car preference)."""
    return {
        "scenario": "A couple visits Paris for a week.",
        "dimensions": ["hotel", "rental_car"],
        "wanted_num": 2,
        "initial_description": "We need a hotel and a rental car in Paris.",
        "hotel": {
            "preferences": [
                ["hotel", "breakfast", "Breakfast included.", "Mornings are hard without food on site."],
                ["hotel", "star rating", "Four stars.", "Comfortable but not over the top."],
            ],
            "options": {
                "correct": [{"id": "H2", "price": 120, "type": "correct", "reason": "fits"}, {"id": "H5"}],
                "wrong": [{"id": "H1", "price": 90, "type": "wrong", "reason": "no breakfast"}],
                "noise": [{"id": "H9"}],
            },
            "arguments": {"city": "Paris"},
            "correct_ids": ["H2", "H5"],
            "best_id": "H2",
        },
        "rental_car": {
            "preferences": [["rental_car", "transmission", "Automatic.", "I never learned a clutch."]],
            "options": {"correct": [{"id": "C3"}, {"id": "C4"}], "wrong": [{"id": "C1"}]},
            "arguments": {"pickup": "Paris"},
            "correct_ids": ["C3", "C4"],
            "best_id": "C3",
        },
    }


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "travelgym_data_21.json"
    path.write_text(json.dumps({TASK_ID: scenario_record()}))
    return path


def travel_row(task_id: str = TASK_ID, ground_truth: str = "['H2', 'C3']") -> dict:
    return make_row(
        "TravelGym",
        "We need a hotel and a rental car in Paris. Choose the cheapest option for each.",
        reward_model={"id": task_id, "ground_truth": ground_truth},
        create_kwargs={"id": task_id},
    )


def play(gym: TravelGym, moves: list[tuple[str, str]], row: dict | None = None):
    async def go():
        await gym.reset(GymTask.from_row(row or travel_row()), episode_id="ep")
        return [await gym.step(Action(c, t)) for c, t in moves]

    return asyncio.run(go())


def eval_gym(scenario_file, **kwargs) -> TravelGym:
    return TravelGym(
        user=ScriptedUser(),
        scenarios_path=scenario_file,
        search_correct_reward=0.2,
        preference_correct_reward=0.6,
        **kwargs,
    )


# ---------------------------------------------------------------- ids and the scenario format
def test_task_ids_name_the_aspects_and_the_variant():
    assert parse_task_id("flight:4-213|rental_car:4-143|restaurant:4-230") == {
        "flight": 4,
        "rental_car": 4,
        "restaurant": 4,
    }
    assert variant_of("flight:3-114|hotel:2-36|rental_car:3-65") == "travel233"
    assert variant_of("flight:2-35|apartment:2-6|rental_car:2-9|restaurant:2-35") == "travel2222"
    assert parse_best_ids("['F8', 'C16', 'R9']", where="row") == {
        "flight": "F8",
        "rental_car": "C16",
        "restaurant": "R9",
    }
    with pytest.raises(TaskDataError, match="boat:2-1"):
        parse_task_id("boat:2-1")
    with pytest.raises(TaskDataError, match="row 3.*'X4'"):
        parse_best_ids("['X4']", where="row 3")


def test_loader_reads_userrl_format_and_strips_hidden_option_fields(scenario_file):
    scenario = scenario_from_record(TASK_ID, scenario_record(), where=str(scenario_file))
    assert scenario.dimensions == ("hotel", "rental_car")
    assert [p.pid for p in scenario.preferences] == ["P1", "P2", "P3"]
    assert scenario.best_ids == {"hotel": "H2", "rental_car": "C3"}
    assert sorted(o["id"] for o in scenario.options["hotel"]) == ["H1", "H2", "H5", "H9"]
    assert not any("type" in o or "reason" in o for opts in scenario.options.values() for o in opts)
    # the same id gives the same option order every time (UserRL reshuffles per construction)
    again = scenario_from_record(TASK_ID, scenario_record(), where="x")
    assert [o["id"] for o in again.options["hotel"]] == [o["id"] for o in scenario.options["hotel"]]
    bad = scenario_record()
    bad["hotel"]["best_id"] = "H7"
    with pytest.raises(TaskDataError, match=r"travelgym_data_21\.json.*'hotel'.*best_id"):
        scenario_from_record(TASK_ID, bad, where=str(scenario_file))


def test_the_old_nested_layout_still_loads_and_a_missing_dimension_is_named(scenario_file):
    record = scenario_record()
    nested = {k: v for k, v in record.items() if k not in record["dimensions"]}
    nested["preferences"] = {d: record[d] for d in record["dimensions"]}
    old = scenario_from_record(TASK_ID, nested, where="old")
    assert old == scenario_from_record(TASK_ID, record, where="new")
    del record["rental_car"]
    with pytest.raises(TaskDataError, match=r"f\.json: scenario .*'rental_car'.*needs a 'rental_car' object"):
        scenario_from_record(TASK_ID, record, where="f.json")


def test_a_scenario_missing_from_the_given_file_is_a_clear_error(scenario_file):
    gym = eval_gym(scenario_file)
    with pytest.raises(TaskDataError, match=r"'flight:2-1\|hotel:2-2' is in none of .*travelgym_data_21\.json"):
        play(gym, [], travel_row("flight:2-1|hotel:2-2", "['F1', 'H1']"))


# ---------------------------------------------------------------- the generator
def test_generator_follows_the_row_id_and_ground_truth():
    task_id = "flight:4-213|rental_car:4-143|restaurant:4-230"
    best = parse_best_ids("['F8', 'C16', 'R9']", where="row")
    record = generate_scenario(task_id, best)
    assert record == generate_scenario(task_id, best)  # deterministic
    assert record != generate_scenario("flight:4-214|rental_car:4-143|restaurant:4-230", best)
    scenario = scenario_from_record(task_id, record, where="generated")
    assert scenario.best_ids == best
    assert [sum(p.dimension == d for p in scenario.preferences) for d in scenario.dimensions] == [4, 4, 4]
    for dim in scenario.dimensions:
        data = record[dim]
        wanted = {p[1] for p in data["preferences"]}
        correct = data["options"]["correct"]
        best_option = next(o for o in correct if o["id"] == best[dim])
        assert best_option["price"] == min(o["price"] for o in correct)
        ids = [o["id"] for kind in ("correct", "wrong", "noise") for o in data["options"][kind]]
        assert len(ids) == len(set(ids)) and all(i[0] == best[dim][0] for i in ids)
        # a wrong option breaks exactly one preference; noise options are sold out
        subcat_attr = {sub: attr for attr, (sub, _) in _catalogue(dim).items()}
        values = {subcat_attr[p[1]]: correct[0][subcat_attr[p[1]]] for p in data["preferences"]}
        assert all(sum(o[a] != v for a, v in values.items()) == 1 for o in data["options"]["wrong"])
        assert all(o["availability"] == "sold out" for o in data["options"]["noise"])
        assert len(wanted) == 4
        # some wrong options undercut the best one, so a blind cheapest pick misses
        assert min(o["price"] for o in data["options"]["wrong"]) < best_option["price"]


def _catalogue(dim):
    from mimesis_pl.envs.gyms.travel.generator import CATALOGUE

    return CATALOGUE[dim]


# ---------------------------------------------------------------- the rule grader
def test_rule_grader_types_utterances(scenario_file):
    scenario = scenario_from_record(TASK_ID, scenario_record(), where="x")
    prefs = list(scenario.preferences)
    assert utterance_type("Is breakfast important to you at the hotel?", prefs, prefs) == (2, prefs[0])
    assert utterance_type("Which star rating would you like?", prefs, prefs) == (2, prefs[1])
    assert utterance_type("Which star rating would you like?", [prefs[0], prefs[2]], prefs) == (3, None)
    assert utterance_type("Do you have any preferences for the hotel?", prefs, prefs) == (4, None)
    assert utterance_type("Paris is lovely in spring.", prefs, prefs) == (1, None)
    assert aspects_named("a rental car and a car rental") == ["rental_car"]
    assert search_alignment('{"aspect": "hotel", "city": "Paris"}', scenario) == ("True", "hotel")
    assert search_alignment("hotel in Lyon", scenario) == ("False", None)
    assert search_alignment("hotel and car in Paris", scenario) == ("False", None)
    assert search_alignment("flights to Paris", scenario) == ("N/A", None)


# ---------------------------------------------------------------- hand-worked episodes
def test_evaluation_rewards_hand_worked(scenario_file):
    # eval settings: search 0.2, preference 0.6; best 1.0, correct 0.8 — no episode-sum clip
    results = play(
        eval_gym(scenario_file),
        [
            ("search", "hotel in Paris"),  # aligned, new aspect: 0.2
            ("search", "hotel in Paris please"),  # aligned, already searched: 0
            ("action", "Is breakfast important to you?"),  # type 2, P1: 0.6
            ("answer", "H2, H5"),  # UserRL: H2 is chosen, then H5 repeats the aspect: the answer pays 0
            ("answer", "H2"),  # the hotel already has a choice: refused, 0
            ("answer", "H5"),  # same aspect again: refused, 0
            ("answer", "C4"),  # correct, not best: 0.8, every aspect chosen -> done
        ],
    )
    assert [r.reward for r in results] == pytest.approx([0.2, 0.0, 0.6, 0.0, 0.0, 0.0, 0.8])
    assert sum(r.reward for r in results) == pytest.approx(1.6)
    assert "H2" in results[0].observation and "Here are all the options for <hotel>" in results[0].observation
    assert results[2].observation == "Mornings are hard without food on site."
    assert results[2].info["user"].reasoning and "Breakfast included." in results[2].info["user"].reasoning
    assert [r.done for r in results] == [False] * 6 + [True]
    assert not any("reward_clipped" in r.info for r in results)


def test_training_rewards_and_the_proactive_reveal(scenario_file):
    # training: 0.0 / 0.8; the proactive reveal UserRL's code means (its async step falls back instead, A82)
    gym = TravelGym(user=ScriptedUser(), scenarios_path=scenario_file, seed=0, proactive_reveal="reveal")
    results = play(
        gym,
        [
            ("search", "hotel in Paris"),  # aligned, but training pays 0 for searches
            ("action", "Paris is lovely."),  # type 1 small talk: user reply, 0
            ("action", "Any preferences?"),  # type 4 vague: canned, 0
            ("action", "The weather looks fine."),  # type 1 again, 0
            ("action", "I hope it stays sunny."),  # fourth off-target turn: proactive reveal, 0
            ("action", "What transmission do you want for the car?"),  # type 2 P3: 0.8
            ("answer", "C3"),  # best car: 1.0; drops no hotel preference
            ("action", "Which star rating do you like?"),  # P2 still hidden unless revealed above
        ],
    )
    rewards = [r.reward for r in results]
    assert rewards[:7] == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.0, 0.8, 1.0])
    assert results[2].info["utterance_type"] == 4 and "too vague" in results[2].observation
    assert results[4].info["how"] == "proactive" and results[4].observation.startswith("By the way, ")
    revealed = results[4].info["elicited"]
    assert rewards[7] == pytest.approx(0.0 if revealed == "P2" else 0.8)
    assert sum(rewards) > 1.0


def test_searches_fail_every_fifth_time_and_answers_need_the_id_format(scenario_file):
    results = play(
        eval_gym(scenario_file),
        [("search", "flights")] * 4
        + [("search", "hotel in Paris"), ("search", "hotel in Paris"), ("answer", "hotel H2"), ("answer", "F1")],
    )
    assert [r.reward for r in results] == pytest.approx([0.0] * 5 + [0.2, 0.0, 0.0])
    assert "backend is experiencing some issues" in results[4].observation
    assert "Invalid option ID format" in results[6].observation
    assert results[7].info["answer"] == "foreign" and not results[7].done


def test_choosing_every_best_option_through_the_manager_on_a_generated_scenario():
    row = travel_row("flight:3-114|hotel:2-36|rental_car:3-65", "['F2', 'C15', 'H20']")
    manager = EnvironmentManager(users=ScriptedUser(), gym_options={"TravelGym": {"search_correct_reward": 0.2}})

    async def go():
        episode = await manager.start(row, "travel-1")
        outs = [await episode.step(action_to_tool_call(Action("search", "a flight please")))]
        for oid in ("F2", "H20", "C15"):
            outs.append(await episode.step(action_to_tool_call(Action("answer", oid))))
        return episode, outs

    episode, outs = asyncio.run(go())
    assert [o.reward for o in outs] == pytest.approx([0.2, 1.0, 1.0, 1.0])
    assert episode.status is Termination.FINISHED and episode.score == pytest.approx(3.2)


@needs_userrl
def test_the_shared_travel_rows_run_on_generated_scenarios():
    tasks = read_gym_tasks(PARQUET / "travel2222_multiturn_onechoice" / "test.parquet", limit=3)
    for task in tasks:
        gym = TravelGym(user=ScriptedUser())
        best = parse_best_ids(task.hidden["ground_truth"], where=task.source)

        async def go(task=task, gym=gym, best=best):
            await gym.reset(task, episode_id="e")
            return [await gym.step(Action("answer", oid)) for oid in best.values()]

        assert [r.reward for r in asyncio.run(go())] == [1.0, 1.0, 1.0, 1.0]


def test_the_expert_elicits_then_picks_every_best_option_on_generated_scenarios():
    from mimesis_pl.data.expert_traces import make_expert
    from mimesis_pl.envs import run_expert_episode

    row = travel_row("flight:2-56|apartment:2-50", "['F4', 'A11']")
    row["prompt"][1]["content"] = "I need a flight to Rome and an apartment there. Choose the cheapest option for each."
    task = GymTask.from_row(row)
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=16)
    trace = asyncio.run(run_expert_episode(manager, task, make_expert(task, [task]), episode_id="expert-travel"))
    answers = [t for t in trace.turns if t.move.action.choice == "answer"]
    assert [(t.move.action.content, t.reward) for t in answers] == [("F4", 1.0), ("A11", 1.0)]
    assert trace.summary.status is Termination.FINISHED
    asked = [t for t in trace.turns if t.move.action.choice == "action"]
    assert sum(t.reward == 0.8 for t in asked) == 4  # two preferences per aspect, each asked for (training: 0.8)
    # reveals come from the user simulator (privileged reasoning for CSD); "no such preference" is canned, as UserRL
    assert all(bool(p.reasoning) == (t.reward == 0.8) for p, t in zip(trace.privileged, trace.turns) if t in asked)


def test_a_written_generated_file_loads_as_userrl_scenarios_with_the_same_rewards(tmp_path, capsys):
    import pyarrow.parquet as pq

    from mimesis_pl.envs.gyms.travel.__main__ import main

    src = str(REPO / "assets/data/travel/train/TravelGym.parquet")
    assert main(["--src", src, "--out", str(tmp_path / "scenarios.json")]) == 0
    assert "wrote 8 TravelGym scenarios" in capsys.readouterr().out
    row = pq.read_table(src).to_pylist()[0]
    moves = [("search", "flight options"), ("action", "Which seat class do you want?"), ("answer", "F10")]
    from_file = play(TravelGym(user=ScriptedUser(), scenarios_path=tmp_path / "scenarios.json"), moves, row)
    generated = play(TravelGym(user=ScriptedUser()), moves, row)
    assert [r.reward for r in from_file] == [r.reward for r in generated] == [0.0, 0.8, 1.0]
    assert [r.observation for r in from_file] == [r.observation for r in generated]
