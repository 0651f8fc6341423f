"""Travel's metrics as the reference computes them (hand-worked), and the report's per-gym metrics hook."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.envs.gyms.travel.metrics import TravelTrial, travel_metrics, trial_values
from mimesis_pl.eval.gym_metrics import extra_gym_metrics, extra_metrics_scalars
from mimesis_pl.eval.report import write_episode_report
from mimesis_pl.eval.trials import RunIdentity, TrialRecord, aggregate_trials

A = "flight:2-1|hotel:2-2"  # travel22
B = "flight:3-1|hotel:2-2|rental_car:3-3"  # travel233
TRIALS = [
    # eval rewards: search 0.2, preference 0.6, best 1.0, correct 0.8
    (A, 0, [0.2, 0.6, 1.0, 0.8], [["F3", 1.0], ["H1", 0.8]]),
    (A, 1, [0.0, 0.0], [["F9", 0.0]]),
    # a 0.8 preference reward (training's setting) is not a correct pick: only answers are counted
    (B, 0, [0.8, 1.0, 1.0, 0.8], [["F1", 1.0], ["H2", 1.0], [" C3", 0.8]]),
]


def test_one_trial_hand_worked():
    values = trial_values(TravelTrial(A, (0.2, 0.6, 1.0, 0.8), (("F3", 1.0), ("H1", 0.8))))
    assert values == pytest.approx(
        {
            "micro_avg": 0.65,
            "micro_max": 1.0,
            "avg_number_of_1": 1.0,
            "avg_number_of_08": 1.0,
            "aspect_score": 0.9,
            "aspect/flight": 1.0,
            "aspect/hotel": 0.8,
        }
    )


def test_metrics_pool_trials_per_task_then_tasks_and_split_by_set():
    out = travel_metrics([TravelTrial(t, tuple(r), tuple((c, v) for c, v in a)) for t, _, r, a in TRIALS])
    assert list(out) == ["travel", "travel22", "travel233"]
    assert out["travel22"] == pytest.approx(
        {
            "tasks": 1,
            "trials": 2,
            "micro_avg": 0.325,
            "micro_max": 0.5,
            "avg_number_of_1": 0.5,
            "avg_number_of_08": 0.5,
            "aspect_score": 0.45,
            "aspect/flight": 0.5,
            "aspect/hotel": 0.4,
        }
    )
    assert out["travel233"]["avg_number_of_08"] == pytest.approx(1.0)
    assert out["travel233"]["micro_avg"] == pytest.approx(0.9)
    assert out["travel"] == pytest.approx(
        {
            "tasks": 2,
            "trials": 3,
            "micro_avg": 0.6125,
            "micro_max": 0.75,
            "avg_number_of_1": 1.25,
            "avg_number_of_08": 0.75,
            "aspect_score": (0.45 + 2.8 / 3) / 2,
            "aspect/flight": 0.75,
            "aspect/hotel": 0.7,
            "aspect/rental_car": 0.8,
        }
    )


def records() -> list[TrialRecord]:
    identity = RunIdentity("agent", "rev", "sim")
    out = [
        TrialRecord(
            key=identity.key("travel", "cfg", task, trial),
            status="scored",
            reward=sum(rewards),
            info={"turn_rewards": rewards, "answers": answers},
        )
        for task, trial, rewards, answers in TRIALS
    ]
    out.append(TrialRecord(key=identity.key("travel", "cfg", B, 1), status="unscored", failure="user_error"))
    out.append(TrialRecord(key=identity.key("function", "cfg", "f-1", 0), status="scored", reward=1.0))
    return out


def test_report_writes_travel_metrics_to_json_and_markdown(tmp_path):
    extra = extra_gym_metrics(records())
    assert list(extra) == ["travel"]  # function has no extra metrics; the unscored trial is left out
    assert extra["travel"]["travel"]["trials"] == 3
    summaries = aggregate_trials(records(), n_trials=2, ks=(1,))
    files = write_episode_report(tmp_path, summaries, (1,), gym_metrics=extra)
    saved = json.loads(files.json.read_text())
    assert saved["gym_metrics"]["travel"]["travel22"]["aspect_score"] == pytest.approx(0.45)
    markdown = files.markdown.read_text()
    assert "### travel: per-gym metrics" in markdown
    assert "| travel22 | 1 | 2 | 0.450 | 0.325 | 0.500 | 0.500 | 0.500 |" in markdown
    assert extra_metrics_scalars(extra)["eval/travel233/aspect_score"] == pytest.approx(2.8 / 3)


def test_a_travel_trial_is_scored_by_its_aspect_score_others_by_the_reward_sum():
    from mimesis_pl.eval.episodes.records import EpisodeRecord, EpisodeStep, episode_outcome

    def record(env_name, task_id, moves):
        steps = tuple(
            EpisodeStep(i, "", {"choice": c, "content": t}, None, "ok", r, i == len(moves) - 1)
            for i, (c, t, r) in enumerate(moves)
        )
        return EpisodeRecord("e", env_name, task_id, "finished", tuple(m[2] for m in moves), steps)

    moves = [("search", "hotel", 0.2), ("action", "breakfast?", 0.6), ("answer", "F3", 1.0), ("answer", "H1", 0.8)]
    travel = episode_outcome(record("TravelGym", A, moves))
    assert travel.reward == pytest.approx(0.9)  # (1.0 + 0.8) / 2, not the turn sum 2.6
    assert travel.info["answers"] == [["F3", 1.0], ["H1", 0.8]]
    assert travel.info["turn_rewards"] == pytest.approx([0.2, 0.6, 1.0, 0.8])
    other = episode_outcome(record("FunctionGym", "f-1", [("action", "1 2 3 4", 0.0), ("answer", "7", 1.0)]))
    assert other.reward == pytest.approx(1.0)


def test_reports_name_travel_grader_and_scenarios_and_say_whether_comparable(tmp_path):
    from mimesis_pl.eval.gym_metrics import gym_notes, travel_note

    offline = travel_note({})  # no judge: the rule grader
    assert "rule grader" in offline and "generated" in offline and "not comparable" in offline
    assert "not comparable" in travel_note({"scenarios_path": "travelgym_data_22.json"})  # rule grader still
    judge = {"class_path": "ServedChatSettings", "init_args": {"url": "http://127.0.0.1:9/v1", "model": "j"}}
    eval_rewards = {"search_correct_reward": 0.2, "preference_correct_reward": 0.6}
    served = travel_note({"scenarios_path": "d.json", "judge": judge, **eval_rewards})
    assert "UserRL's scenario files" in served and "computed as UserRL" in served
    # training's rewards (TravelGym's defaults) or a non-UserRL rule are named as the reason (issue 34 item 11)
    training = travel_note({"scenarios_path": "d.json", "judge": judge})
    assert "not comparable" in training and "preference_correct_reward=0.8 (UserRL's evaluation: 0.6)" in training
    refuse = travel_note({"scenarios_path": "d.json", "judge": judge, **eval_rewards, "multi_id_answers": "refuse"})
    assert "multi_id_answers='refuse'" in refuse
    notes = gym_notes({"TravelGym": {}}, ["function", "travel"])
    assert list(notes) == ["function", "travel"] and "FunctionGym" in notes["function"]
    extra = extra_gym_metrics(records())
    files = write_episode_report(tmp_path, aggregate_trials(records(), 2), (1,), gym_metrics=extra, gym_notes=notes)
    assert json.loads(files.json.read_text())["gym_notes"]["travel"] == offline
    assert offline in files.markdown.read_text()
