"""The gym protocol: actions, step results, termination kinds and the ``Gym`` base class.

A gym plays one episode of one task. It is async because most gyms wait on a user simulator.
Rewards are per step. A gym declares how they are bounded (``reward_bounds``): ``"episode"`` (the
default; the **sum over an episode stays in [0, 1]**: a step reward that would push the sum past 1 is
clipped), ``"step"`` (each step reward in [0, 1], the sum unbounded: TravelGym, whose preference and
answer rewards add up past 1 as in UserRL) or ``"none"`` (rewards as the gym gives them: the UserRL
adapter). A changed reward is flagged ``info["reward_clipped"]`` (docs/decisions.md A40).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from mimesis_pl.chat.think import split_think
from mimesis_pl.checks import check_choice
from mimesis_pl.envs.tasks import GymTask, TaskDataError  # TaskDataError's home is beside GymTask, in tasks.py
from mimesis_pl.envs.user_protocol import UserReply, UserSimulator, UserSimulatorError

ACTION_CHOICES: tuple[str, ...] = ("action", "answer", "search")

RewardBounds = Literal["episode", "step", "none"]

# Rounding slack when checking that an episode's rewards stay within [0, 1].
_REWARD_EPS = 1e-9


@dataclass(frozen=True)
class Action:
    """One move of the agent: ``choice`` is ``action`` (talk/probe), ``answer`` or ``search``."""

    choice: str
    content: str

    def __post_init__(self) -> None:
        check_choice("Action.choice", self.choice, ACTION_CHOICES)
        if not isinstance(self.content, str):
            raise TypeError(f"Action.content must be a str, got {type(self.content).__name__}")


@dataclass(frozen=True)
class StepResult:
    """What a gym returns for one action.

    ``observation`` is the only field the agent ever sees. ``info`` carries bookkeeping that must never
    be rendered to the agent (e.g. ``info["user"]``: the simulator's :class:`UserReply`, whose
    ``reasoning`` is privileged).
    """

    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class Termination(enum.StrEnum):
    """How an episode ended, kept apart from its reward.

    ``env_error``, ``user_error``, ``judge_error`` and ``timeout`` are infrastructure failures: their
    trajectories should be masked or retried, never learned from as if the agent had failed.
    """

    FINISHED = "finished"  # the gym ended the episode (solved, or out of options)
    MAX_TURNS = "max_turns"  # the turn budget ran out
    ABORTED = "aborted"  # the caller ended the episode early (e.g. context budget)
    ENV_ERROR = "env_error"  # the gym raised
    USER_ERROR = "user_error"  # the user simulator failed to reply
    JUDGE_ERROR = "judge_error"  # a gym's served judge gave no verdict (docs/decisions.md A52)
    TIMEOUT = "timeout"  # a reset or step exceeded its deadline
    NO_TOOL_CALL = "no_tool_call"  # the agent's turn had no tool call: ended and scored, as UserRL (A84)

    @property
    def is_failure(self) -> bool:
        return self in (Termination.ENV_ERROR, Termination.USER_ERROR, Termination.JUDGE_ERROR, Termination.TIMEOUT)


class EpisodeOverError(RuntimeError):
    """``step`` was called on an episode that has already ended."""


class Gym(abc.ABC):
    """Base class of every gym.

    Subclasses set ``env_name`` (UserRL's ``reward_model.env_name``, e.g. ``"TelepathyGym"``),
    ``data_sources`` (parquet ``data_source`` aliases), ``choices`` (the action choices the gym's
    system prompt allows) and ``needs_user``; they implement ``_reset`` and ``_step``. User-facing gyms
    talk to their user through :meth:`_ask_user`, which keeps the simulator's reasoning out of the
    observation.
    """

    env_name: ClassVar[str]
    data_sources: ClassVar[tuple[str, ...]] = ()
    choices: ClassVar[tuple[str, ...]] = ACTION_CHOICES
    needs_user: ClassVar[bool] = True
    reward_bounds: ClassVar[RewardBounds] = "episode"
    # Bind the episode's user to the privileged shim (``{shim}/ep/{id}/v1``); TauGym opts out, as UserRL's (A55).
    episode_scoped: ClassVar[bool] = True
    # Choices the gym handles like its offered ones though its prompt does not offer them (UserRL's Intention
    # and Persuade read every prefix as a question / an argument, A87); an instance may clear them.
    also_accepts: tuple[str, ...] = ()

    def __init__(self, *, user: UserSimulator | None = None) -> None:
        self.user = user
        self.episode_id = ""
        self._task: GymTask | None = None
        self._done = False
        self._total_reward = 0.0
        # Public exchanges with the user: (agent utterance, user's public reply).
        self._dialogue: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ public protocol
    async def reset(self, task: GymTask, *, episode_id: str = "episode") -> str:
        """Start an episode on ``task``; returns the public opening text (the task's user prompt)."""
        if self.needs_user and self.user is None:
            raise ValueError(f"{type(self).__name__} needs a user simulator (pass user=...)")
        self.episode_id = episode_id
        self._task = task
        self._done = False
        self._total_reward = 0.0
        self._dialogue = []
        await self._reset(task)
        return task.opening_text

    async def step(self, action: Action) -> StepResult:
        if self._task is None:
            raise RuntimeError(f"{type(self).__name__}.step called before reset")
        if self._done:
            raise EpisodeOverError(f"{type(self).__name__}: episode {self.episode_id!r} has already ended")
        check_choice("choice", action.choice, self.accepted_choices, where=type(self).__name__)
        result = await self._step(action)
        return self._bounded(result)

    async def aclose(self) -> None:
        """Release resources held for the episode (the user simulator is closed by its owner); a no-op by default."""
        return None

    @property
    def done(self) -> bool:
        return self._done

    @property
    def accepted_choices(self) -> tuple[str, ...]:
        """The choices a step takes: the offered ``choices`` and ``also_accepts``."""
        return (*self.choices, *(c for c in self.also_accepts if c not in self.choices))

    @property
    def total_reward(self) -> float:
        return self._total_reward

    @property
    def task(self) -> GymTask:
        if self._task is None:
            raise RuntimeError(f"{type(self).__name__} has no task before reset")
        return self._task

    # ------------------------------------------------------------------ for subclasses
    @abc.abstractmethod
    async def _reset(self, task: GymTask) -> None: ...

    @abc.abstractmethod
    async def _step(self, action: Action) -> StepResult: ...

    def _persona_prompt(self) -> str:
        """System prompt for the user simulator (hidden task data included). User-facing gyms override."""
        raise NotImplementedError(f"{type(self).__name__} does not talk to a user")

    async def _ask_user(self, utterance: str) -> UserReply:
        """Send the agent's utterance to the user simulator; returns its reply with reasoning split off.

        Raises :class:`UserSimulatorError` when the simulator fails or says nothing public.
        """
        assert self.user is not None
        messages = dialogue_messages(self._persona_prompt(), self._dialogue, utterance)
        reply = await self.user.reply(messages, episode_id=self.episode_id)
        if not isinstance(reply, UserReply):
            raise UserSimulatorError(f"{type(self.user).__name__}.reply returned {type(reply).__name__}, not UserReply")
        # Defence in depth: a simulator that inlines <think> in its public text must not leak it.
        inline_reasoning, public = split_think(reply.public)
        reasoning = "\n".join(r for r in (reply.reasoning, inline_reasoning) if r) or None
        if not public:
            raise UserSimulatorError(f"user simulator gave no public reply in episode {self.episode_id!r}")
        self._dialogue.append((utterance, public))
        return UserReply(public=public, reasoning=reasoning)

    def _result(self, observation: str, reward: float = 0.0, *, done: bool = False, **info: Any) -> StepResult:
        if done:
            self._done = True
        return StepResult(observation=observation, reward=reward, done=done, info=dict(info))

    def _bounded(self, result: StepResult) -> StepResult:
        reward = float(result.reward)
        if self.reward_bounds == "none":
            clipped = reward
        elif self.reward_bounds == "step":
            clipped = min(max(reward, 0.0), 1.0)
        else:
            clipped = min(max(reward, 0.0), max(0.0, 1.0 - self._total_reward))
        info = result.info
        if abs(clipped - reward) > _REWARD_EPS:
            info = {**info, "reward_clipped": reward}
        self._total_reward += clipped
        return StepResult(result.observation, clipped, result.done, info)


def dialogue_messages(
    persona_prompt: str, exchanges: Sequence[tuple[str, str]], utterance: str
) -> list[dict[str, str]]:
    """The messages a user simulator receives: persona, earlier exchanges, the new utterance."""
    messages = [{"role": "system", "content": persona_prompt}]
    for said, heard in exchanges:
        messages += [{"role": "user", "content": said}, {"role": "assistant", "content": heard}]
    messages.append({"role": "user", "content": utterance})
    return messages


def require(mapping: Mapping[str, Any], key: str, *, where: str) -> Any:
    """``mapping[key]`` or a :class:`TaskDataError` naming ``where`` and the missing field."""
    value = mapping.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise TaskDataError(f"{where}: field {key!r} is missing or empty")
    return value
