"""Play a scripted expert through the EnvironmentManager, exactly as an agent's turns are run.

The episode runner of :mod:`mimesis_pl.envs.expert`'s experts; used by ``mimesis-pl data record-experts``
and the gym tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from mimesis_pl.envs.expert import Expert, ExpertMove, Turn
from mimesis_pl.envs.manager import EnvironmentManager, EpisodeSummary, PrivilegedTurn
from mimesis_pl.envs.tasks import GymTask


@dataclass(frozen=True)
class ExpertTrace:
    """A played episode: the expert's turns, the episode summary and the simulator's privileged records."""

    turns: list[ExpertTurn]
    summary: EpisodeSummary
    privileged: list[PrivilegedTurn]


@dataclass(frozen=True)
class ExpertTurn:
    """One played turn: the expert's move, the observation it got back and the step's reward."""

    move: ExpertMove
    observation: str
    reward: float


async def run_expert_episode(
    manager: EnvironmentManager, task: GymTask, expert: Expert, *, episode_id: str
) -> ExpertTrace:
    """Play ``task`` with ``expert`` through the manager, exactly as an agent's turns would be run."""
    episode = await manager.start(task, episode_id)
    turns: list[ExpertTurn] = []
    history: list[Turn] = []
    prompt = task.public_messages()
    while not episode.done:
        move = expert.act(prompt, history)
        observation, reward, _ = await episode.step(move.assistant_text())
        turns.append(ExpertTurn(move, observation, reward))
        history.append((move.action, observation))
    summary = await episode.finish()
    return ExpertTrace(turns, summary, list(episode.privileged))
