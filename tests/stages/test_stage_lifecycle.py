"""The stages of an RL step share one declared lifecycle, and both rollout stages validate by one rule.

Before the stages shared :class:`~mimesis_pl.stages.base.ValidatingStage`, the agent's stage validated before the
first step of a fresh run whenever validation was on, ignoring ``val_before_train``; simulator RL's honoured it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mimesis_pl.rollout.coaching import CoachingSettings, CoachStage
from mimesis_pl.rollout.settings import AdvantageSettings, RolloutSettings
from mimesis_pl.rollout.validation import ValidationSettings
from mimesis_pl.stages import CollectStage, Stage
from mimesis_pl.stages.agent import RolloutStage
from mimesis_pl.stages.simulator import (
    FoldAdvantageSettings,
    SimRolloutSettings,
    SimValidationSettings,
    TaskRolloutStage,
)
from mimesis_pl.tasks.clients import RoleSettings


class _EpisodesStarted(Exception):
    """Raised by the fake engine when the step's episodes would start: what ran before it is the first-step work."""


class _Engine:
    def update_weights(self, model) -> None:
        pass

    def wake_up(self) -> None:
        raise _EpisodesStarted


def _module(total_batch_idx: int) -> SimpleNamespace:
    trainer = SimpleNamespace(
        fit_loop=SimpleNamespace(total_batch_idx=total_batch_idx),
        global_rank=0,
        world_size=1,
        global_step=total_batch_idx,
        datamodule=SimpleNamespace(val_rows=[{"data_source": "x"}], val_files=["val.jsonl"]),
    )
    return SimpleNamespace(trainer=trainer, weights_version=0, global_step=total_batch_idx, model=None)


def _agent_stage(val_before_train: bool) -> RolloutStage:
    stage = RolloutStage(RolloutSettings(), AdvantageSettings(), ValidationSettings(val_before_train=val_before_train))
    stage.rollout, stage.engine = object(), _Engine()  # as after the first step built them
    return stage


def _simulator_stage(val_before_train: bool) -> TaskRolloutStage:
    stage = TaskRolloutStage(
        SimRolloutSettings(n_samples=2),
        RoleSettings(),
        {},
        FoldAdvantageSettings(),
        SimValidationSettings(val_before_train=val_before_train),
    )
    stage._ctx, stage.engine = SimpleNamespace(), _Engine()
    return stage


def _validations_before_the_episodes(stage, total_batch_idx: int) -> list[str]:
    ran: list[str] = []
    if isinstance(stage, RolloutStage):
        stage._validate = lambda module, steps_done: ran.append(f"validate@{steps_done}")
    else:
        stage.validate = lambda module: ran.append("validate")
    with pytest.raises(_EpisodesStarted):
        stage.collect(_module(total_batch_idx), [{"data_source": "x"}], 0)
    return ran


@pytest.mark.parametrize("make", [_agent_stage, _simulator_stage], ids=["agent", "simulator"])
@pytest.mark.parametrize("val_before_train", [False, True])
def test_first_step_validation_obeys_val_before_train_in_both_stages(make, val_before_train):
    ran = _validations_before_the_episodes(make(val_before_train), total_batch_idx=0)
    assert len(ran) == int(val_before_train), ran
    # Past a fresh run's first step (a resumed run included), nothing validates before the episodes.
    assert _validations_before_the_episodes(make(True), total_batch_idx=3) == []


def test_both_rollout_stages_implement_the_declared_lifecycle():
    for stage in (_agent_stage(False), _simulator_stage(False)):
        assert isinstance(stage, CollectStage), type(stage).__name__
    coach = CoachStage(CoachingSettings())
    assert isinstance(coach, Stage) and not isinstance(coach, CollectStage)


def test_the_best_checkpoint_state_round_trips_through_the_shared_base():
    stage = _agent_stage(False)
    stage.best.load_state_dict(stage.best.state_dict() | {"best": 0.5, "path": "best-step=2.ckpt"})
    saved = stage.state_dict()
    other = _simulator_stage(False)  # no best_metric: nothing saved or restored
    assert other.state_dict() == {} and saved["best"]["best"] == 0.5
    fresh = _agent_stage(False)
    fresh.load_state_dict(saved)
    assert fresh.state_dict() == saved
