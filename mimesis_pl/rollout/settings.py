"""Typed settings of the agent's rollouts (each field a YAML key under ``model.init_args``).

- :class:`EpisodeSettings` — how one episode runs against a gym; the *same* object configures training
  rollouts, RL validation and agent evaluation, so the two cannot drift apart;
- :class:`RolloutSettings` — the engine, the simulated users, the episode and the sampling of a step;
- :class:`AdvantageSettings` — multi-turn GRPO scores, credits and failure masking.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .engines.base import AGENT_TURN_TOKENS
from .engines.settings import EngineSettings, HFEngineSettings
from .failures import check_max_failed_share
from .pipeline import ResumeInflight, check_pipeline_settings
from .services import ScriptedHTTPUserSettings, UserSimSettings

log = logging.getLogger(__name__)


def plain_options(value: Any) -> Any:
    """``gym_options`` as plain mappings and lists: jsonargparse hands a ``class_path`` mapping (a TauGym runtime, a
    SearchGym backend, a judge) over as a ``Namespace``; the gym builds the class itself (``checks.build_choice``)
    and trial keys hash the options as written."""
    from jsonargparse import Namespace

    if isinstance(value, Namespace):
        return plain_options(value.as_dict())
    if isinstance(value, dict):
        return {key: plain_options(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [plain_options(inner) for inner in value]
    return value


@dataclass
class EpisodeSettings:
    """How one episode runs against a gym (training rollouts, RL validation and agent evaluation alike).

    Args:
        max_turns: agent turns per episode (reference: 16 in training and evaluation).
        gym_options: per gym constructor options, e.g. ``{TurtleGym: {success_threshold: 1.0}}``.
        step_timeout_s: deadline of one gym step, the user's reply included; past it the episode ends as a
            ``timeout`` failure (masked out of training; retried, then unscored, in evaluation).
        show_reward: append ``Reward: r`` to observations (keep it the same in training and evaluation).
        gyms: gyms of your own package, by import path (``my_pkg.gyms:SPEC``, a ``GymSpec`` or a ``Gym`` subclass):
            registered before anything else reads the settings, they train, evaluate, take ``gym_options`` and get
            their scripted user rule like the built-in ones (docs/extending.md).
    """

    max_turns: int = 16
    # ``dict`` values, not ``dict[str, Any]``: jsonargparse fills a class's defaults into a ``class_path`` mapping
    # it finds under ``Any`` (a gym judge would lose the reference judge's defaults: D32); under ``dict`` it does not.
    gym_options: dict[str, dict] = field(default_factory=dict)
    step_timeout_s: float = 300.0
    show_reward: bool = False
    gyms: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from ..envs.registry import import_gym

        for path in self.gyms:
            import_gym(path, key="episode.gyms")
        if self.max_turns < 1:
            raise ValueError(f"episode.max_turns must be >= 1, got {self.max_turns}")
        if self.step_timeout_s <= 0:
            raise ValueError(f"episode.step_timeout_s must be > 0, got {self.step_timeout_s}")
        from ..envs.option_checks import check_gym_options

        self.gym_options = plain_options(self.gym_options)
        check_gym_options(self.gym_options)  # gyms, judges, keys, files: before the first episode (E28)

    def manager(self, users: Any, shim_url: str | None, shim_token: str | None = None) -> Any:
        """The :class:`~mimesis_pl.envs.EnvironmentManager` that runs episodes with these settings (``shim_token``:
        the shim's bearer token, which the gyms that read the shim themselves send)."""
        from ..envs import EnvironmentManager

        return EnvironmentManager(
            users=users,
            shim_url=shim_url,
            shim_token=shim_token,
            gym_options=self.gym_options,
            max_turns=self.max_turns,
            step_timeout_s=self.step_timeout_s,
            show_reward=self.show_reward,
        )


@dataclass
class SamplingSettings:
    """What both RL rollouts share — the engine, sampling, limits and rollouts ahead of the update — as the base of
    the agent's :class:`RolloutSettings` and simulator RL's ``SimRolloutSettings`` (each sets its own defaults).

    Args:
        engine: the rollout engine (``class_path``): HF on the policy's weights (default), vLLM, SGLang or a
            served model; engines that load weights default to the policy's ``model_path``.
        n_samples: rollouts per prompt (the group size the advantages compare within).
        max_new_tokens: the budget of one generated turn.
        max_length: cap on a whole trajectory (prompt + every turn).
        temperature: sampling temperature.
        top_p: nucleus mass kept.
        top_k: keep the k most likely tokens (-1: off).
        max_concurrency: rollouts in flight at once.
        max_failed_share: the run stops with an error (exit code 3) when more than this share of a step's (or a
            validation pass's) rollouts fail for infrastructure reasons (a simulator, judge, partner or
            environment that did not answer; docs/decisions.md A76); 1 never stops.
        max_staleness: k, the RL steps a batch's rollouts may start ahead of the update that trains them. 0: the
            synchronous step (no thread). k >= 1: the next k batches roll out on a background thread while the
            update runs (batch N is still trained at step N; staleness <= k asserted each step;
            docs/decisions.md A91, A101).
        wait_timeout_s: with k >= 1, how long the trainer waits for a batch's rollouts before failing with the
            in-flight counts (``null``: no limit).
        resume_inflight: with k >= 1, what a resume does with the batches the checkpoint had in flight:
            ``regenerate`` rolls them out again under the loaded weights (lossless: each batch trained once, in
            order); ``restore`` trains the rollouts the checkpoint kept (it waits for them when saving), so the
            resumed run is bit-identical to one that was not stopped (docs/decisions.md A92, A101).
    """

    engine: EngineSettings = field(default_factory=HFEngineSettings)
    n_samples: int = 8
    max_new_tokens: int = AGENT_TURN_TOKENS
    max_length: int = 9344
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_concurrency: int = 128
    max_failed_share: float = 0.5
    max_staleness: int = 0
    wait_timeout_s: float | None = None
    resume_inflight: ResumeInflight = "regenerate"

    #: what the group's advantages are called in the one-sample warning
    advantage_name: ClassVar[str] = "GRPO"

    def __post_init__(self) -> None:
        where = "model.init_args.rollout"
        check_max_failed_share(self.max_failed_share, f"{where}.max_failed_share")
        check_pipeline_settings(self.max_staleness, self.wait_timeout_s)
        if self.n_samples < 1:
            raise ValueError(f"{where}.n_samples must be >= 1, got {self.n_samples}")
        if self.n_samples == 1:  # A73
            log.warning(
                "rollout.n_samples is 1: %s compares rollouts within a prompt's group, so every advantage is 0 "
                "and only weight decay changes the weights; use n_samples >= 2 to learn",
                self.advantage_name,
            )


@dataclass
class RolloutSettings(SamplingSettings):
    """How an agent RL step's episodes are produced (reference: n 8, 16 turns, 1152 + 8192 tokens, T = 1); the engine,
    sampling and pipeline fields are :class:`SamplingSettings`'.

    Args:
        users: the simulated users (``class_path``): scripted over HTTP behind the real shim (``None``, the
            default), scripted in process, or a served simulator behind the shim.
        episode: turns, gym options, step deadline, reward display.
        enable_thinking: the chat template's ``enable_thinking`` (``None``: the template's default).
    """

    users: UserSimSettings | None = None
    episode: EpisodeSettings = field(default_factory=EpisodeSettings)
    enable_thinking: bool | None = None

    @property
    def user_settings(self) -> UserSimSettings:
        """``users``, or (``None``) the scripted user over HTTP behind the real shim. The default is not the field's:
        jsonargparse carries a default instance's same-named fields into another ``class_path`` (a checkpoint user
        would sample at the scripted one's temperature 0.0)."""
        return self.users if self.users is not None else ScriptedHTTPUserSettings()

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}


@dataclass
class AdvantageSettings:
    """Multi-turn GRPO (reference: γ 0.8 per turn, R2G credits, R2G trajectory score; here turn-level by default).

    Args:
        estimator: ``turn`` (each turn's discounted return z-scored against the same turn of its group, so
            the turn that loses the reward is the one pushed down; ``credit`` and ``zero_credit`` are unused;
            docs/decisions.md A8b) or ``trajectory`` (the reference's: one group z-score per trajectory,
            shared among its turns by ``credit``), or your own as ``package.module:function``
            (:mod:`mimesis_pl.rl.advantage_estimators`; docs/extending.md).
        gamma: per-turn discount of reward-to-go credits, returns and scores.
        credit: how a trajectory's z-score is shared among its turns.
        score: a trajectory's score from its turn rewards (logged as ``rollout/score_mean``).
        norm_by_std: divide by the group's standard deviation (GRPO) or only centre (Dr. GRPO).
        eps: added to the standard deviation.
        zero_credit: what a trajectory whose credits are all zero gets (``uniform``: its z on every turn).
        mask_failures: keep infrastructure failures (env/user errors, timeouts) out of the loss.
        success_threshold: an episode whose summed reward, clipped to [0, 1], reaches it counts as a success (the
            evaluation's rule, :class:`mimesis_pl.envs.success.SuccessRule`).
    """

    estimator: str = "turn"
    gamma: float = 0.8
    credit: Literal["r2g", "equalized", "em"] = "r2g"
    score: Literal["r2g", "mean", "sum"] = "r2g"
    norm_by_std: bool = True
    eps: float = 1e-6
    zero_credit: Literal["uniform", "none"] = "uniform"
    mask_failures: bool = True
    success_threshold: float = 1.0

    def __post_init__(self) -> None:
        from ..rl.advantage_estimators import resolve_advantage_estimator

        resolve_advantage_estimator(self.estimator, key="model.init_args.advantage.estimator")
