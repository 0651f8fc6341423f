"""Every built-in gym is solvable: the scripted expert reaches reward 1 against the scripted user."""

from __future__ import annotations

import pytest
from gym_fixtures import all_rewards_bounded, all_tasks, expert_for, needs_userrl, play, scripted_manager, tasks

from mimesis_pl.envs import Termination
from mimesis_pl.envs.tool import parse_action

# FunctionGym's expert searches ~0.7 M candidate rules per task; a sample keeps the default run fast.
LIMITS = {"FunctionGym": 12, "TelepathyGym": None, "TurtleGym": None, "IntentionGym": None, "PersuadeGym": None}


@needs_userrl
@pytest.mark.parametrize("env_name", sorted(LIMITS))
def test_expert_reaches_reward_one_on_the_test_split(env_name):
    manager = scripted_manager()
    chosen = tasks(env_name)[: LIMITS[env_name]]
    for i, task in enumerate(chosen):
        turns, summary = play(manager, task, expert_for(task), episode_id=f"{env_name}-{i}")
        assert summary.status is Termination.FINISHED, (task, summary)
        assert summary.score == pytest.approx(1.0), (task, [(t.move.action, t.observation, t.reward) for t in turns])
        assert all_rewards_bounded(summary.rewards)
        assert summary.counters.get("tool_errors", 0) == 0
        assert summary.turns <= manager.max_turns
    assert manager.active_episode_ids == []


@needs_userrl
@pytest.mark.parametrize("env_name", sorted(LIMITS))
def test_expert_moves_are_natural_tool_calls(env_name):
    task = tasks(env_name)[0]
    turns, _ = play(scripted_manager(), task, expert_for(task))
    for turn in turns:
        text = turn.move.assistant_text()
        assert text.startswith("<think>") and turn.move.thought in text
        assert parse_action(text) == turn.move.action
        assert turn.move.action.content.strip() == turn.move.action.content and turn.move.action.content


@pytest.mark.slow
@needs_userrl
@pytest.mark.parametrize("env_name", sorted(LIMITS))
def test_expert_reaches_reward_one_on_every_task(env_name):
    manager = scripted_manager()
    failures = []
    for i, task in enumerate(all_tasks(env_name)):
        _, summary = play(manager, task, expert_for(task), episode_id=f"{env_name}-{i}")
        if summary.score < 1.0 - 1e-9:
            failures.append((task.key, summary.score))
    assert failures == []
