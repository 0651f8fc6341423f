"""Episode runners: the agent under test playing one gym episode, the environment owning the trajectory.

A runner starts an episode through the :class:`~mimesis_pl.envs.EnvironmentManager` (which builds
the gym and its simulated user), hands each agent turn to ``Episode.step`` — so the action the agent
actually took is executed against the current state — and feeds the observation back as the agent's
next input. It returns an :class:`EpisodeRecord`.

:class:`EngineEpisodeRunner` drives a token-level engine (HF, vLLM, SGLang, token-level OpenAI)
through the training rollout loop itself (:class:`~mimesis_pl.rollout.loop.MultiTurnRollout`), so
evaluation sees the same prompt, template, tool schema and observation format as training.
:class:`~mimesis_pl.eval.episodes.openai_runner.OpenAIChatEpisodeRunner` drives a chat endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mimesis_pl.envs import EnvironmentManager, GymTask, TurnResult
from mimesis_pl.envs.tool import parse_turn
from mimesis_pl.eval.episodes.records import EpisodeRecord, EpisodeStep
from mimesis_pl.failures import AgentTransportFailure
from mimesis_pl.rollout.engines import OpenAIEngineError
from mimesis_pl.rollout.loop import MultiTurnRollout


@runtime_checkable
class EpisodeRunner(Protocol):
    """Plays one episode of ``task`` with the agent under test.

    ``manager`` is the EnvironmentManager it plays against; ``settings()`` lists everything on the
    agent side that changes results (sampling, limits, template), for the trial cache key.
    ``run_episode`` raises an :class:`~mimesis_pl.failures.InfrastructureFailure` when the agent
    could not be reached; gym and simulator failures end the episode with a failure status instead.
    """

    manager: EnvironmentManager

    def settings(self) -> Mapping[str, Any]: ...

    async def run_episode(self, task: GymTask, episode_prefix: str) -> EpisodeRecord: ...


def step_record(
    turn: int, text: str, result: TurnResult, choices: tuple[str, ...], finish_reason: str | None = None
) -> EpisodeStep:
    """The record of one executed turn: what the agent wrote, what was executed, what came back."""
    parsed = parse_turn(text, allowed_choices=choices)  # the same parse Episode.step just made
    action = {"choice": parsed.action.choice, "content": parsed.action.content} if parsed.action else None
    return EpisodeStep(
        turn=turn,
        agent_output=text,
        action=action,
        tool_error=parsed.error.kind if parsed.error else None,
        observation=result.observation,
        reward=result.reward,
        done=result.done,
        finish_reason=finish_reason,
    )


@dataclass
class _StepLog:
    choices: tuple[str, ...]
    steps: list[tuple[str, TurnResult]]
    episode: Any = None  # the live Episode, read after the loop for its error message


class _RecordingEpisode:
    """Delegates to a live :class:`~mimesis_pl.envs.Episode` and logs every executed step — including
    the last observation, which the rollout loop does not keep once the episode is over."""

    def __init__(self, episode: Any, log: _StepLog) -> None:
        self._episode = episode
        self._log = log

    async def step(self, text: str) -> TurnResult:
        result = await self._episode.step(text)
        self._log.steps.append((text, result))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._episode, name)


class _RecordingManager:
    """The manager the rollout loop sees: the real one, with each started episode wrapped for logging."""

    def __init__(self, manager: EnvironmentManager) -> None:
        self.manager = manager
        self.logs: dict[str, _StepLog] = {}

    async def start(self, row: Any, episode_id: str) -> _RecordingEpisode:
        episode = await self.manager.start(row, episode_id)
        log = self.logs[episode_id] = _StepLog(tuple(episode.gym.choices), [], episode)
        return _RecordingEpisode(episode, log)


class EngineEpisodeRunner:
    """Episodes of a token-level engine, run by the training rollout loop.

    Args:
        rollout: a :class:`MultiTurnRollout` (engine, tokenizer, manager, sampling, ``max_length``,
            template variables). Its manager is wrapped so every step is recorded; build it with the
            evaluation's own manager.
    """

    def __init__(self, rollout: MultiTurnRollout) -> None:
        self.manager: EnvironmentManager = rollout.manager
        self._recorder = _RecordingManager(rollout.manager)
        rollout.manager = self._recorder  # type: ignore[assignment]  # the loop only calls .start
        self.rollout = rollout

    def settings(self) -> dict[str, Any]:
        s = self.rollout.sampling
        return {
            "runner": "engine",
            "max_new_tokens": s.max_new_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "top_k": s.top_k,
            "max_length": self.rollout.max_length,
            "template_kwargs": dict(self.rollout.template_kwargs),
        }

    async def run_episode(self, task: GymTask, episode_prefix: str) -> EpisodeRecord:
        started = time.perf_counter()
        trajectory = None
        try:
            trajectory = await self.rollout.run_episode(task, group_id=episode_prefix, gen_uid=episode_prefix)
        except OpenAIEngineError as err:  # a served token-level engine that is down
            raise AgentTransportFailure(f"engine failed in an episode of {task.env_name}/{task.key}: {err}") from err
        finally:
            # The loop names the episode "{prefix}-{suffix}"; drop the log of an attempt that raised.
            keep = trajectory.episode_id if trajectory is not None else None
            for episode_id in [e for e in self._recorder.logs if e.startswith(f"{episode_prefix}-") and e != keep]:
                del self._recorder.logs[episode_id]
        log = self._recorder.logs.pop(trajectory.episode_id, _StepLog((), []))
        steps = [
            step_record(t, text, result, log.choices, _at(trajectory.finish_reasons, t))
            for t, (text, result) in enumerate(log.steps)
        ]
        if len(trajectory.finish_reasons) > len(steps):
            # The last turn ran out of tokens: the loop did not send it to the environment.
            t = len(steps)
            steps.append(
                EpisodeStep(
                    turn=t,
                    agent_output=trajectory.messages[-1]["content"],
                    action=None,
                    tool_error=None,
                    observation=None,
                    reward=0.0,
                    done=True,
                    finish_reason=trajectory.finish_reasons[t],
                )
            )
        return EpisodeRecord(
            episode_id=trajectory.episode_id,
            env_name=task.env_name,
            task_id=task.key,
            status=trajectory.status,
            turn_rewards=tuple(trajectory.turn_rewards),
            steps=tuple(steps),
            messages=tuple(trajectory.messages),
            simulator=tuple({"reply": p.reply, "reasoning": p.reasoning} for p in trajectory.privileged),
            error=getattr(log.episode, "error", None),
            counters=dict(trajectory.counters),
            duration_s=time.perf_counter() - started,
        )


def _at(values: list[str], index: int) -> str | None:
    return values[index] if index < len(values) else None
