"""FunctionGym: probing, the test case, answers, rewards and data errors."""

from __future__ import annotations

import asyncio
import json

import pytest
from gym_fixtures import GYM_JSON, make_row, needs_userrl

from mimesis_pl.envs import Action, EpisodeOverError, GymTask, TaskDataError
from mimesis_pl.envs.gyms.function import FunctionGym, compile_rule, evaluate_rule, load_functions


@pytest.fixture()
def functions_file(tmp_path):
    path = tmp_path / "functions.json"
    records = [
        {"id": "func-1", "rule": "c * (a * b) * d", "test_case": [3, 5, 5, 3], "expected_result": 225.0},
        {"id": "func-2", "rule": "a / (b - c) + d", "test_case": [6, 4, 2, 1], "expected_result": 4.0},
    ]
    path.write_text(json.dumps(records))
    return path


def _task(fid: str, truth: str | None = None) -> GymTask:
    rm = {"id": fid} | ({"ground_truth": truth} if truth is not None else {})
    return GymTask.from_row(
        make_row("FunctionGym", "Begin probing.", reward_model=rm, create_kwargs={"id": fid}), source="t"
    )


def _run(gym: FunctionGym, task: GymTask, *actions: Action):
    async def go():
        await gym.reset(task)
        return [await gym.step(a) for a in actions]

    return asyncio.run(go())


def test_probe_search_and_correct_answer(functions_file):
    gym = FunctionGym(functions_path=functions_file)
    search, probe, answer = _run(
        gym, _task("func-1", "225.0"), Action("search", "test"), Action("action", "1 2 3 4"), Action("answer", "225")
    )
    assert search.observation.startswith("The test case is f(3, 5, 5, 3) = ?") and search.reward == 0.0
    assert probe.observation == "f(1, 2, 3, 4) = 24" and probe.reward == 0.0 and not probe.done
    assert answer.reward == 1.0 and answer.done and gym.total_reward == 1.0


def test_wrong_answer_earns_zero_and_the_episode_goes_on(functions_file):
    gym = FunctionGym(functions_path=functions_file, parsing="package")  # finds the number in a sentence
    wrong, right = _run(gym, _task("func-1"), Action("answer", "224"), Action("answer", "The answer is 225."))
    assert (wrong.reward, wrong.done) == (0.0, False) and wrong.observation.startswith("Incorrect")
    assert (right.reward, right.done) == (1.0, True)
    with pytest.raises(EpisodeOverError):
        asyncio.run(gym.step(Action("answer", "225")))


def test_probe_errors_are_observations_not_exceptions(functions_file):
    gym = FunctionGym(functions_path=functions_file)
    results = _run(
        gym,
        _task("func-2"),
        Action("action", "6 4 2 1"),  # the test case itself
        Action("action", "1 2 2 0"),  # division by zero
        Action("action", "1 2"),
        Action("action", "a b c d"),
        Action("search", "rule"),
        Action("answer", "four"),
        Action("action", "1, 3, 2, 0"),
    )
    texts = [r.observation for r in results]
    assert texts[0].startswith("Those inputs are the test case")
    assert texts[1] == "f(1, 2, 2, 0) is undefined (division by zero, or not a finite real number)."
    assert texts[2].startswith("Invalid input") and texts[3].startswith("Invalid input")
    assert texts[4].startswith("Invalid search")
    assert texts[5].startswith("Invalid answer")
    assert texts[6] == "f(1, 3, 2, 0) = 1"
    assert all(r.reward == 0.0 and not r.done for r in results)
    assert all("a / (b - c)" not in t for t in texts)


def test_data_errors_name_the_task_and_file(functions_file):
    with pytest.raises(TaskDataError, match="func-9.*functions.json"):
        _run(FunctionGym(functions_path=functions_file), _task("func-9"))
    with pytest.raises(TaskDataError, match="ground_truth"):
        _run(FunctionGym(functions_path=functions_file), _task("func-1", "226"))


def test_rules_are_sandboxed():
    for bad in ("__import__('os').system('true')", "a + e", "a.real + b", "[a, b]"):
        with pytest.raises(TaskDataError):
            compile_rule(bad)
    assert evaluate_rule("a ** b ** c ** d", (9, 9, 9, 9)) is None  # far beyond the result limit
    assert evaluate_rule("(a - b) ** 0.5", (1, 2, 0, 0)) is None  # not a real number


@needs_userrl
def test_evaluator_reproduces_every_expected_result():
    table = load_functions(str(GYM_JSON / "FunctionGym/functiongym/data/functions.json"))
    assert len(table) == 538
    for fid, record in table.items():
        assert evaluate_rule(record["rule"], record["test_case"]) == record["expected_result"], fid


def test_bundled_copy_is_used_by_default():
    gym = FunctionGym()
    assert gym.functions_path.name == "functions.json" and gym.functions_path.is_file()
    assert len(load_functions(str(gym.functions_path))) == 538


# ---------------------------------------------------------------- UserRL's parsing (issue 34 item 6, A85)
def userrl_function_step(choice: str, content: str, rule, test_case, expected) -> tuple[str, float, bool]:
    """Independent port of UserRL's FunctionEnv step outcome: (kind, reward, terminated)."""
    import re

    if choice == "action":
        numbers = [float(m) for m in re.findall(r"-?\d+\.?\d*", content) if m]
        if len(numbers) != 4:
            return "invalid", 0.0, False
        if numbers == list(test_case):
            return "test_case", 0.0, False
        return f"value {round(evaluate_rule(rule, numbers), 4)}", 0.0, False
    try:
        value = float(content.strip())
    except ValueError:
        return "invalid", 0.0, False
    ok = abs(value - expected) <= 1e-6
    return ("correct" if ok else "wrong"), (1.0 if ok else 0.0), ok


@pytest.mark.parametrize(
    ("choice", "content"),
    [
        ("answer", "The answer is 225"),  # UserRL: not a float -> invalid, 0
        ("answer", "1,234"),  # invalid for UserRL
        ("answer", " 225 "),  # correct
        ("answer", "2.25e2"),  # Python float: correct
        ("action", "a=1, b=2, c=3, d=4"),  # four numbers: probed
        ("action", "1.5 2 3 4"),  # decimals probed
        ("action", "3, 5, 5, 3"),  # the test case
        ("action", "1 2 3"),  # three numbers
    ],
)
def test_function_inputs_and_answers_are_read_as_userrl_reads_them(functions_file, choice, content):
    record = {"rule": "c * (a * b) * d", "test_case": [3, 5, 5, 3], "expected_result": 225.0}
    kind, reward, done = userrl_function_step(choice, content, record["rule"], record["test_case"], 225.0)
    (result,) = _run(FunctionGym(functions_path=functions_file), _task("func-1"), Action(choice, content))
    assert (result.reward, result.done) == (reward, done)
    if kind == "invalid":
        assert result.observation.startswith("Invalid")
    elif kind == "test_case":
        assert "test case" in result.observation
    elif kind.startswith("value"):
        assert result.observation.endswith(f"= {float(kind.split()[1]):g}")
