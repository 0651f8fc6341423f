"""A researcher's own simulator-RL task, outside mimesis_pl: the simulator must echo a word inside <answer>.

A config trains on rows with ``data_source: echo`` after ``model: {init_args: {tasks: [echo_task:SPECS]}}``.
"""

from __future__ import annotations

from mimesis_pl.tasks.registry import TaskSpec
from mimesis_pl.tasks.single_turn import Scored, SingleTurnTask, chat

#: Tasks built, by this process (a test reads it to see the task was the one run).
BUILT: list[str] = []


def prompt(info, row):
    return chat("You are a user.", f"Say the word {info['word']} inside <answer></answer>.")


def score(answer, info, row):
    return Scored(float(answer is not None and answer.strip().lower() == str(info["word"]).lower()))


def echo(data_source: str) -> SingleTurnTask:
    BUILT.append(data_source)
    return SingleTurnTask(data_source, prompt, score, prefix="echo")


#: One task; as a SOUL set it joins the CONV axis under the name "Echo".
SPECS = [TaskSpec("echo", "echo_task:echo", soul_axis="CONV", name="Echo")]


def rows(words):
    return [{"data_source": "echo", "extra_info": {"index": i, "word": w}} for i, w in enumerate(words)]
