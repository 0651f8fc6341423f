"""EnvironmentManager: one gym (and one user simulator) per episode, with failures kept apart from rewards.

The rollout calls ``episode = await manager.start(row, episode_id)``, then
``observation, reward, done = await episode.step(assistant_text)`` per turn, then
``await episode.finish()``. Each episode:

- is built from the row's ``extra_info.tools_kwargs`` (gym name) with the gym's configured options;
- gets its own user simulator, bound to ``{shim_url}/ep/{episode_id}/v1`` when a shim is configured;
- turns a malformed or unknown tool call into an error observation (counted; the turn is spent, the
  episode goes on); a turn with no tool call at all ends the episode (``no_tool_call``, scored with the
  rewards so far), as UserRL's evaluation and training do, unless ``no_tool_call="continue"`` (A84);
- ends with a :class:`Termination` kept apart from the reward. An exception in the gym is
  ``env_error``, a failing simulator ``user_error``, a reset/step past its deadline ``timeout``: the
  trajectory can then be masked instead of being learned as a zero-reward failure;
- releases the gym and the simulator as soon as it ends (``finish`` is idempotent).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from mimesis_pl.envs.base import EpisodeOverError, Gym, StepResult, TaskDataError, Termination
from mimesis_pl.envs.registry import GymRegistry, default_registry
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.tool import MISSING, format_observation, format_tool_error, parse_turn
from mimesis_pl.envs.user_protocol import UserProvider, UserReply, UserSimulator, UserSimulatorError
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.shim.client import shim_root
from mimesis_pl.shim.store import check_episode_id

log = logging.getLogger(__name__)

_FAILURE_TEXT = {
    Termination.ENV_ERROR: "Error: the environment failed while handling this action. The episode has ended.",
    Termination.USER_ERROR: "Error: the user did not respond. The episode has ended.",
    Termination.JUDGE_ERROR: "Error: the environment could not grade this action. The episode has ended.",
    Termination.TIMEOUT: "Error: the environment did not respond in time. The episode has ended.",
}


def episode_base_url(shim_url: str, episode_id: str) -> str:
    """``{shim}/ep/{episode_id}/v1`` for a shim given as ``http://host:port``, ``…/`` or ``…/v1[/]``.

    The shim's own rules decide (one place): the same root normalisation and episode-id check.
    """
    return f"{shim_root(shim_url)}/ep/{check_episode_id(episode_id)}/v1"


class TurnResult(NamedTuple):
    """What one agent turn produces: the tool message text, the step reward and whether the episode ended."""

    observation: str
    reward: float
    done: bool


@dataclass(frozen=True)
class PrivilegedTurn:
    """The simulator's side of one turn, for the coach only; never rendered to the agent.

    Both fields are ``None`` on turns that did not call the simulator (answers, probes, tool errors),
    so that turn ``t`` always lines up with entry ``t``.
    """

    reply: str | None = None
    reasoning: str | None = None


@dataclass
class EpisodeSummary:
    episode_id: str
    env_name: str
    task_key: str
    status: Termination
    turns: int
    rewards: list[float]
    score: float
    counters: dict[str, int] = field(default_factory=dict)
    error: str | None = None


class Episode:
    """One running episode; create it with :meth:`EnvironmentManager.start`."""

    def __init__(
        self,
        *,
        manager: EnvironmentManager,
        episode_id: str,
        task: GymTask,
        gym: Gym,
        user: UserSimulator | None,
        user_base_url: str | None,
    ) -> None:
        self.episode_id = episode_id
        self.task = task
        self.gym = gym
        self.user = user
        self.user_base_url = user_base_url
        self.status: Termination | None = None
        self.error: str | None = None
        self.turns = 0
        self.rewards: list[float] = []
        self.privileged: list[PrivilegedTurn] = []
        self.counters: Counter[str] = Counter()
        self._manager = manager
        self._released = False

    @property
    def done(self) -> bool:
        return self.status is not None

    @property
    def score(self) -> float:
        """Episode score: the sum of step rewards (in [0, 1] for the built-in gyms but Travel: decisions A40)."""
        return sum(self.rewards)

    async def step(self, text: str) -> TurnResult:
        """Run one agent turn (its full text: reasoning, prose and tool call)."""
        if self.done:
            raise EpisodeOverError(f"episode {self.episode_id!r} has ended ({self.status.value})")  # type: ignore[union-attr]
        m = self._manager
        self.turns += 1
        self.counters["turns"] += 1
        parsed = parse_turn(text, allowed_choices=self.gym.accepted_choices)
        if parsed.ignored_calls:
            self.counters["tool_calls_ignored"] += parsed.ignored_calls
        if parsed.error is not None:
            self.counters["tool_errors"] += 1
            self.counters[f"tool_error/{parsed.error.kind}"] += 1
            if parsed.error.kind == MISSING and m.no_tool_call == "end":
                self.status = Termination.NO_TOOL_CALL  # UserRL: the rollout stops at a turn without a call
            return await self._record(format_tool_error(parsed.error), 0.0, None, gym_done=False)
        assert parsed.action is not None
        self.counters[f"action/{parsed.action.choice}"] += 1
        try:
            result = await asyncio.wait_for(self.gym.step(parsed.action), timeout=m.step_timeout_s)
        except Exception as err:  # classified, recorded and turned into an ended episode
            return await self._fail(err, during="step")
        observation = result.observation
        if parsed.ignored_calls:
            observation += f"\n(Only the first tool call of a turn is executed; {parsed.ignored_calls} more ignored.)"
        return await self._record(observation, result.reward, result, gym_done=result.done)

    async def finish(self, status: Termination | None = None) -> EpisodeSummary:
        """End the episode (if it is still running, with ``status``, default ``aborted``) and release it."""
        if not self.done:
            self.status = status or Termination.ABORTED
        await self._release()
        return self.summary()

    def summary(self) -> EpisodeSummary:
        return EpisodeSummary(
            episode_id=self.episode_id,
            env_name=self.gym.env_name,
            task_key=self.task.key,
            status=self.status or Termination.ABORTED,
            turns=self.turns,
            rewards=list(self.rewards),
            score=self.score,
            counters=dict(self.counters),
            error=self.error,
        )

    # ------------------------------------------------------------------ internals
    async def _record(
        self, observation: str, reward: float, result: StepResult | None, *, gym_done: bool
    ) -> TurnResult:
        self.rewards.append(float(reward))
        user_reply = result.info.get("user") if result is not None else None
        if isinstance(user_reply, UserReply):
            self.counters["user_replies"] += 1
            self.privileged.append(PrivilegedTurn(user_reply.public, user_reply.reasoning))
        else:
            self.privileged.append(PrivilegedTurn())
        if result is not None:
            for key in ("reward_clipped", "stance_unparsed"):
                if key in result.info:
                    self.counters[key] += 1
        if gym_done:
            self.status = Termination.FINISHED
        elif self.status is None and self.turns >= self._manager.max_turns:
            self.status = Termination.MAX_TURNS
        text = format_observation(observation, reward=reward, show_reward=self._manager.show_reward)
        if self.done:
            await self._release()
        return TurnResult(text, float(reward), self.done)

    async def _fail(self, err: BaseException, *, during: str) -> TurnResult:
        status = classify_failure(err)
        self.status = status
        self.error = f"{during}: {type(err).__name__}: {err}"
        self.counters[f"failure/{status.value}"] += 1
        log.warning(
            "episode %s (%s) ended with %s during %s: %r", self.episode_id, self.task.key, status.value, during, err
        )
        self.rewards.append(0.0)
        self.privileged.append(PrivilegedTurn())
        await self._release()
        return TurnResult(_FAILURE_TEXT[status], 0.0, True)

    async def _release(self) -> None:
        if self._released:
            return
        self._released = True
        try:
            await self.gym.aclose()
        except Exception as err:  # a failing close must not hide the episode's own outcome
            log.warning("episode %s: gym close failed: %r", self.episode_id, err)
        if self.user is not None:
            try:
                await self.user.aclose()
            except Exception as err:
                log.warning("episode %s: user close failed: %r", self.episode_id, err)
        self._manager._on_release(self)


def classify_failure(err: BaseException) -> Termination:
    if isinstance(err, TimeoutError):
        return Termination.TIMEOUT
    if isinstance(err, UserSimulatorError):
        return Termination.USER_ERROR
    if isinstance(err, JudgeFailure):
        return Termination.JUDGE_ERROR
    return Termination.ENV_ERROR


class EnvironmentManager:
    """Builds, runs and releases one gym per episode.

    Args:
        users: hands out one user simulator per episode (``ScriptedUser()`` offline, ``OpenAIUser(...)``
            for a served simulator). Required when a gym needs a user.
        shim_url: the privileged shim in front of the simulator; each episode's simulator is bound to
            ``{shim_url}/ep/{episode_id}/v1``. ``None``: simulators keep their own base URL.
        gym_options: per gym (``env_name`` or ``data_source``) constructor options, e.g.
            ``{"FunctionGym": {"functions_path": "assets/gyms/functions.json"}}``.
        max_turns: agent turns per episode (UserRL trains and evaluates with 16).
        step_timeout_s / reset_timeout_s: deadlines; exceeding one ends the episode as ``timeout``.
        show_reward: append ``Reward: r`` to observations (off: training and evaluation see the same text).
        no_tool_call: ``"end"`` (UserRL's rule) ends the episode at a turn without a tool call, status
            ``no_tool_call`` (scored); ``"continue"`` shows an error and spends the turn (A84).
        shim_token: the shim's bearer token, for gyms that read the shim themselves (the UserRL adapter).
    """

    def __init__(
        self,
        *,
        users: UserProvider | None = None,
        shim_url: str | None = None,
        shim_token: str | None = None,
        gym_options: Mapping[str, Mapping[str, Any]] | None = None,
        max_turns: int = 16,
        step_timeout_s: float = 300.0,
        reset_timeout_s: float | None = None,
        show_reward: bool = False,
        registry: GymRegistry | None = None,
        no_tool_call: Literal["end", "continue"] = "end",
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        if no_tool_call not in ("end", "continue"):
            raise ValueError(f"no_tool_call must be 'end' or 'continue', got {no_tool_call!r}")
        self.no_tool_call = no_tool_call
        if shim_url is not None:
            episode_base_url(shim_url, "check")  # fail at construction on a malformed URL
        self.registry = registry or default_registry()
        self.users = users
        self.shim_url = shim_url
        self.shim_token = shim_token
        self.gym_options = {self.registry.canonical_name(k): dict(v) for k, v in (gym_options or {}).items()}
        self.max_turns = max_turns
        self.step_timeout_s = step_timeout_s
        self.reset_timeout_s = reset_timeout_s if reset_timeout_s is not None else step_timeout_s
        self.show_reward = show_reward
        self.totals: Counter[str] = Counter()
        self._active: dict[str, Episode] = {}

    @property
    def active_episode_ids(self) -> list[str]:
        return list(self._active)

    def get(self, episode_id: str) -> Episode:
        if episode_id not in self._active:
            raise KeyError(f"no active episode {episode_id!r}")
        return self._active[episode_id]

    async def start(self, row: Mapping[str, Any] | GymTask, episode_id: str) -> Episode:
        """Build and reset the gym for ``row``. Bad rows or options raise; runtime failures end the episode.

        A returned episode may already be ``done`` (status ``env_error``/``user_error``/``timeout``) when
        its reset failed; check ``episode.done`` before the first turn.
        """
        if episode_id in self._active:
            raise ValueError(f"episode id {episode_id!r} is already active; episode ids must be unique")
        task = row if isinstance(row, GymTask) else GymTask.from_row(row, source=f"row of episode {episode_id!r}")
        cls, options = self.registry.resolve(
            task.env_name, self.gym_options.get(self.registry.canonical_name(task.env_name))
        )
        if getattr(cls, "takes_shim_url", False):  # adapter gyms reach their LLM through the shim (A47)
            options["shim_url"] = self.shim_url
            if self.shim_token is not None:  # a shim with a token answers nothing without it
                options["shim_token"] = self.shim_token
        if getattr(cls, "takes_max_turns", False):  # adapter gyms: UserRL's max_steps is the turn budget (A81)
            options.setdefault("max_turns", self.max_turns)
        # TauGym opts out of the per-episode binding, as UserRL's (A55)
        base_url = episode_base_url(self.shim_url, episode_id) if self.shim_url and cls.episode_scoped else None
        user: UserSimulator | None = None
        if cls.needs_user:
            if self.users is None:
                raise ValueError(f"{cls.env_name} needs a user simulator: configure EnvironmentManager(users=...)")
            user = self.users.for_episode(episode_id, base_url)
        try:
            gym = cls(user=user, **options)
        except Exception:
            if user is not None:
                await user.aclose()
            raise
        episode = Episode(manager=self, episode_id=episode_id, task=task, gym=gym, user=user, user_base_url=base_url)
        self._active[episode_id] = episode
        self.totals["episodes_started"] += 1
        try:
            await asyncio.wait_for(gym.reset(task, episode_id=episode_id), timeout=self.reset_timeout_s)
        except TaskDataError:
            episode.status = Termination.ABORTED
            await episode._release()
            raise
        except Exception as err:
            await episode._fail(err, during="reset")
            episode.rewards.clear()
            episode.privileged.clear()
        return episode

    def _on_release(self, episode: Episode) -> None:
        self._active.pop(episode.episode_id, None)
        self.totals["episodes_released"] += 1
        self.totals[f"status/{(episode.status or Termination.ABORTED).value}"] += 1
        for key, value in episode.counters.items():
            self.totals[key] += value
