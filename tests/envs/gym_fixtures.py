"""Helpers for the gym tests: UserRL-shaped rows, the shared data location, experts, leak scanning."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest

from mimesis_pl.envs import EnvironmentManager, Expert, GymTask, read_gym_tasks, run_expert_episode
from mimesis_pl.envs.gyms.function import FunctionExpert
from mimesis_pl.envs.gyms.intention import IntentionExpert
from mimesis_pl.envs.gyms.persuade import PersuadeExpert
from mimesis_pl.envs.gyms.telepathy import TelepathyExpert
from mimesis_pl.envs.gyms.turtle import TurtleExpert
from mimesis_pl.envs.text import word_ngrams, words
from mimesis_pl.users.scripted import ScriptedUser

USERRL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "userrl"
PARQUET = USERRL / "data"
GYM_JSON = USERRL / "gyms"

FILES = {
    "FunctionGym": "function_multiturn",
    "TelepathyGym": "telepathy_multiturn",
    "TurtleGym": "turtle_multiturn",
    "IntentionGym": "intention_multiturn",
    "PersuadeGym": "persuasion_multiturn",
}

needs_userrl = pytest.mark.skipif(not PARQUET.is_dir(), reason=f"UserRL data not found at {PARQUET}")


def make_row(
    env_name: str, user_text: str, *, reward_model: dict[str, Any], create_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A row shaped like UserRL's parquet rows."""
    return {
        "data_source": "interact_" + env_name.lower(),
        "prompt": [{"role": "system", "content": f"You play {env_name}."}, {"role": "user", "content": user_text}],
        "ability": "interaction",
        "reward_model": {"style": "rule", "env_name": env_name, **reward_model},
        "extra_info": {
            "index": 0,
            "split": "test",
            "need_tools_kwargs": True,
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"env_name": env_name, **create_kwargs}}},
        },
    }


@cache
def tasks(env_name: str, split: str = "test") -> tuple[GymTask, ...]:
    return tuple(read_gym_tasks(PARQUET / FILES[env_name] / f"{split}.parquet"))


@cache
def all_tasks(env_name: str) -> tuple[GymTask, ...]:
    return tasks(env_name, "train") + tasks(env_name, "test")


def expert_for(task: GymTask) -> Expert:
    """The scripted expert for a task; guessing experts know every card of the gym's train+test files."""
    if task.env_name == "FunctionGym":
        return FunctionExpert()
    if task.env_name == "TelepathyGym":
        return _telepathy_expert()
    if task.env_name == "TurtleGym":
        return _turtle_expert()
    if task.env_name == "IntentionGym":
        return IntentionExpert.for_task(task)
    return PersuadeExpert()


@lru_cache(maxsize=1)
def _telepathy_expert() -> TelepathyExpert:
    return TelepathyExpert.from_tasks(all_tasks("TelepathyGym"))


@lru_cache(maxsize=1)
def _turtle_expert() -> TurtleExpert:
    return TurtleExpert.from_tasks(all_tasks("TurtleGym"))


def scripted_manager(**kwargs: Any) -> EnvironmentManager:
    return EnvironmentManager(users=ScriptedUser(), **kwargs)


def play(manager: EnvironmentManager, task: GymTask, expert: Expert, episode_id: str = "ep"):
    """Run the expert; returns ``(turns, summary)``."""
    trace = asyncio.run(run_expert_episode(manager, task, expert, episode_id=episode_id))
    return trace.turns, trace.summary


async def play_texts(manager: EnvironmentManager, task: GymTask, texts: Iterable[str], episode_id: str = "ep"):
    """Run fixed assistant texts until the episode ends; returns (episode, [(text, observation, reward)])."""
    episode = await manager.start(task, episode_id)
    turns = []
    for text in texts:
        if episode.done:
            break
        observation, reward, _ = await episode.step(text)
        turns.append((text, observation, reward))
    return episode, turns


def leaked_ngrams(secret: str, observations: Sequence[str], public: Sequence[str], n: int = 6) -> set[tuple[str, ...]]:
    """Runs of ``n`` words of ``secret`` found in an observation but in none of the public texts."""
    allowed: set[tuple[str, ...]] = set()
    for text in public:
        allowed |= word_ngrams(text, n)
    found: set[tuple[str, ...]] = set()
    secret_grams = word_ngrams(secret, n)
    for observation in observations:
        found |= (word_ngrams(observation, n) & secret_grams) - allowed
    return found


def contains_words(haystack: str, needle: str) -> bool:
    """``needle``'s words appear consecutively in ``haystack`` (case and punctuation ignored)."""
    hay, pin = words(haystack), words(needle)
    return bool(pin) and any(hay[i : i + len(pin)] == pin for i in range(len(hay) - len(pin) + 1))


def all_rewards_bounded(rewards: Sequence[float]) -> bool:
    return all(0.0 <= r <= 1.0 for r in rewards) and -1e-9 <= sum(rewards) <= 1.0 + 1e-9
