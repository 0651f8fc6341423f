"""Helpers for the episode tests: a token engine that plays scripted turns, gym task rows, a killer runner.

The scripted engine is a real token-in/token-out engine for the rollout loop: it reads the prompt ids
it is given, decides the next turn from them (the task's opening text and how many assistant turns
came before), and returns the token ids of that turn — so episodes run through the real loop, real
gyms, real users and the real shim with deterministic agent behaviour (TRL's scripted-ids pattern).
"""

from __future__ import annotations

from collections.abc import Callable

from mimesis_pl.data.prompts import read_prompt_rows
from mimesis_pl.envs import Action, GymTask
from mimesis_pl.envs.tool import action_to_tool_call
from mimesis_pl.rollout.engines import GenerationResult, SamplingParams

VAL_FILES = ["assets/data/gyms/val/*.parquet"]


def say(choice: str, content: str, thought: str = "thinking") -> str:
    return f"<think>{thought}</think>\n" + action_to_tool_call(Action(choice, content))


def val_tasks(*env_names: str) -> list[GymTask]:
    """The validation tasks of the shipped tiny gym sets (2 per gym), sorted by gym and id."""
    tasks = [GymTask.from_row(r, source=r["_source"]) for r in read_prompt_rows(VAL_FILES)]
    chosen = [t for t in tasks if not env_names or t.env_name in env_names]
    return sorted(chosen, key=lambda t: (t.env_name, t.key))


# turn text per (opening-text marker, turn index); the last entry repeats
SCRIPTS: dict[str, list[str]] = {
    "an animal": [
        say("action", "Is it a fast animal?"),
        say("action", "Does it have spots?"),
        say("answer", "Cheetah"),
    ],
    "a space artifact": [say("action", "Is it a satellite?"), say("answer", "The Moon")],
    "My mapping function": [
        say("search", "test"),
        "I will not call a tool this turn.",
        say("action", "1 2 3 4"),
        say("answer", "42"),
    ],
}


def scripted_turn(prompt_text: str) -> str:
    turn = prompt_text.count("<|im_start|>assistant") - 1  # the generation prompt is the last one
    for marker, turns in SCRIPTS.items():
        if marker in prompt_text:
            return turns[min(turn, len(turns) - 1)]
    return say("answer", "no idea")


class ScriptedTokenEngine:
    """A :class:`~mimesis_pl.rollout.engines.RolloutEngine` whose turns come from ``policy(prompt_text)``.

    Records every prompt (ids) it receives in ``prompts``.
    """

    def __init__(self, tokenizer, policy: Callable[[str], str] = scripted_turn) -> None:
        self.tokenizer = tokenizer
        self.policy = policy
        self.prompts: list[list[int]] = []

    async def generate(self, prompt_ids: list[int], params: SamplingParams) -> GenerationResult:
        self.prompts.append(list(prompt_ids))
        text = self.policy(self.tokenizer.decode(prompt_ids, skip_special_tokens=False))
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [params.stop_token_ids[0]]
        if len(ids) > params.max_new_tokens:
            return GenerationResult(ids[: params.max_new_tokens], None, "length")
        return GenerationResult(ids, None, "stop")

    def update_weights(self, source) -> None:
        pass

    def sleep(self) -> None:
        pass

    def wake_up(self) -> None:
        pass

    def close(self) -> None:
        pass


class Killed(Exception):
    """Stands in for the process dying mid-run (unclassified: it propagates, it is not retried)."""


class KillAfter:
    """Wraps an episode runner; the episode after the first ``n`` finished ones raises :class:`Killed`.

    ``started`` lists the episode prefixes (one per trial attempt) that really ran.
    """

    def __init__(self, runner, n: int | None) -> None:
        self.runner, self.n = runner, n
        self.manager = runner.manager
        self.started: list[str] = []

    def settings(self):
        return self.runner.settings()

    async def run_episode(self, task, episode_prefix):
        if self.n is not None and len(self.started) >= self.n:
            raise Killed("the process died")
        self.started.append(episode_prefix)
        return await self.runner.run_episode(task, episode_prefix)
