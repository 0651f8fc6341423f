"""TravelGym against an independent port of UserRL's async Travel step (issue 34 items 1, 3, 4).

The port below is written from UserRL's ``travelgym/env/prompt_async.py::async_evaluate_action`` and
``travel_env.py::step_async``: the judge's verdicts are given per step (the rule grader's, hand-checked), so
both sides see the same verdicts and only the reward and state rules are compared.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from test_travel_gym import TASK_ID, scenario_record, travel_row

from mimesis_pl.envs import GymTask
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.gyms.travel import TravelGym
from mimesis_pl.envs.gyms.travel.generator import generate_scenario
from mimesis_pl.envs.gyms.travel.metrics import aspect_score
from mimesis_pl.users.scripted import ScriptedUser

# UserRL's fallback reply when its responding step fails (what its proactive branch always reaches)
USERRL_FALLBACK = "I'm sorry, I'm not sure how to respond to your latest utterance right now. Please try again."
INITIALS = {"F": "flight", "A": "apartment", "C": "rental_car", "H": "hotel", "R": "restaurant"}


class UserRLTravelPort:
    """UserRL's async Travel rules, eval settings (search 0.2, preference 0.6, best 1.0, correct 0.8)."""

    def __init__(self, record: dict, *, interval: int = 3) -> None:
        self.dims = record["dimensions"]
        # UserRL reads each dimension at the top level of the scenario record
        self.best = [record[d]["best_id"] for d in self.dims if d in record]
        self.correct = [i for d in self.dims if d in record for i in record[d]["correct_ids"]]
        self.prefs = [(f"P{n + 1}", d) for n, d in enumerate(d for d in self.dims for _ in record[d]["preferences"])]
        self.nonpref, self.interval, self.initials = 0, interval, []

    def talk(self, judged_type: int, pid: str | None = None) -> tuple[float, str]:
        if judged_type == 2:
            self.nonpref = 0
            self.prefs = [p for p in self.prefs if p[0] != pid]
            return 0.6, "revealed"
        if self.nonpref >= self.interval and self.prefs:
            self.nonpref = 0  # the proactive branch reads an unset reply and falls back; nothing is elicited
            return 0.0, "fallback"
        self.nonpref += 1
        return 0.0, "plain"

    def answer(self, content: str) -> tuple[float, bool]:
        reward = 0.0
        for oid in [i.strip() for i in content.split(",")]:
            if not (oid[:1] in "ACFHR" and oid[1:].isdigit() and len(oid) > 1) or oid[0] in self.initials:
                return 0.0, self.best == []
            if oid in self.best:
                reward += 1.0
                self.best.remove(oid)
                self.correct.remove(oid)
            elif oid in self.correct:
                reward += 0.8
                self.correct.remove(oid)
            self.initials.append(oid[0])
            self.prefs = [p for p in self.prefs if p[1] != INITIALS[oid[0]]]
        return max(reward, 0.0), self.best == []


def play(gym: TravelGym, moves, row=None):
    async def go():
        await gym.reset(GymTask.from_row(row or travel_row()), episode_id="ep")
        return [await gym.step(Action(c, t)) for c, t in moves]

    return asyncio.run(go())


@pytest.fixture
def userrl_file(tmp_path):
    path = tmp_path / "travelgym_data_21.json"
    path.write_text(json.dumps({TASK_ID: scenario_record()}))
    return path


def eval_gym(path, **options) -> TravelGym:
    return TravelGym(
        user=ScriptedUser(),
        scenarios_path=path,
        search_correct_reward=0.2,
        preference_correct_reward=0.6,
        **options,
    )


# (move, the rule grader's verdict: utterance type and preference) — four off-target turns, then three asks
OFF_TARGET_THEN_ASK = [
    (("action", "Paris is lovely."), (1, None)),
    (("action", "Any preferences?"), (4, None)),
    (("action", "The weather looks fine."), (1, None)),
    (("action", "I hope the flight is smooth."), (1, None)),
    (("action", "Is breakfast important to you?"), (2, "P1")),
    (("action", "Which star rating would you like?"), (2, "P2")),
    (("action", "What transmission do you want for the car?"), (2, "P3")),
]


def test_proactive_turn_is_userrls_fallback_on_the_fourth_off_target_turn(userrl_file):
    port = UserRLTravelPort(scenario_record())
    expected = [port.talk(*verdict) for _, verdict in OFF_TARGET_THEN_ASK]
    results = play(eval_gym(userrl_file), [move for move, _ in OFF_TARGET_THEN_ASK])
    assert [r.reward for r in results] == pytest.approx([r for r, _ in expected])
    assert [r for r, _ in expected] == pytest.approx([0, 0, 0, 0, 0.6, 0.6, 0.6])  # hand-worked
    assert [i for i, (_, how) in enumerate(expected) if how == "fallback"] == [3]
    assert results[3].observation == USERRL_FALLBACK and results[3].info["how"] == "proactive_fallback"
    assert "elicited" not in results[3].info


def test_the_reveal_option_volunteers_a_preference_on_the_fourth_off_target_turn(userrl_file):
    results = play(eval_gym(userrl_file, proactive_reveal="reveal"), [move for move, _ in OFF_TARGET_THEN_ASK])
    assert [r.info.get("how") for r in results[:4]] == [None, None, None, "proactive"]
    revealed = results[3].info["elicited"]
    paid = [r.reward for r in results[4:]]
    assert paid == pytest.approx([0.0 if pid == revealed else 0.6 for pid in ("P1", "P2", "P3")])


@pytest.mark.parametrize(
    "answers",
    [
        ["H2, C3"],  # both best in one answer: 2.0, every best chosen -> done
        ["H5, C3"],  # correct + best: 1.8
        ["H2, H5"],  # second id repeats the aspect: 0, H2 stays chosen
        ["H2, x1", "C4"],  # a bad id stops the answer with 0; H2 stays chosen; C4 correct
        ["H1, C4"],  # wrong + correct: 0.8
    ],
)
def test_answers_with_several_ids_pay_as_userrl(userrl_file, answers):
    port = UserRLTravelPort(scenario_record())
    expected = []
    for a in answers:
        reward, done = port.answer(a)
        # ours also ends once every aspect has a choice (UserRL's sync rule, A44)
        expected.append((pytest.approx(reward), done or len(set(port.initials)) == len(port.dims)))
    results = play(eval_gym(userrl_file), [("answer", a) for a in answers])
    assert [(r.reward, r.done) for r in results] == expected


def test_two_best_ids_pay_two_and_the_refuse_option_keeps_one_id_per_answer(userrl_file):
    assert [r.reward for r in play(eval_gym(userrl_file), [("answer", "H2, C3")])] == [2.0]
    refused = play(eval_gym(userrl_file, multi_id_answers="refuse"), [("answer", "H2, C3"), ("answer", "H2")])
    assert [r.reward for r in refused] == [0.0, 1.0] and refused[0].info["answer"] == "multiple"


def test_a_generated_record_is_in_userrls_layout():
    record = generate_scenario("flight:2-1|hotel:3-2", {"flight": "F4", "hotel": "H9"})
    port = UserRLTravelPort(record)  # reads record[dimension], as UserRL's task_data.py
    assert sorted(port.best) == ["F4", "H9"] and len(port.prefs) == 5
    assert "preferences" not in record


def analyze_py_score(task_id: str, answers: list[tuple[str, float]]) -> float:
    """Independent port of UserRL's analyze.py Travel item score: answers bucketed by the content's first
    character, the best reward per bucket summed over the trip's aspects / number of aspects."""
    letters = {"flight": "F", "hotel": "H", "apartment": "A", "restaurant": "R", "rental_car": "C"}
    aspects = [part.split(":")[0] for part in task_id.split("|")]
    best = {letters[a]: 0.0 for a in aspects}
    for content, reward in answers:
        if content[:1] in best:
            best[content[0]] = max(best[content[0]], reward)
    return sum(best.values()) / len(aspects)


@pytest.mark.parametrize("answers", [["H2, C3"], ["H5, C3"], ["H2", "C4"], ["H1, C4"]])
def test_the_travel_score_of_several_id_answers_equals_analyze_py(userrl_file, answers):
    results = play(eval_gym(userrl_file), [("answer", a) for a in answers])
    scored = [(a, r.reward) for a, r in zip(answers, results)]
    assert aspect_score(TASK_ID, scored) == pytest.approx(analyze_py_score(TASK_ID, scored))
