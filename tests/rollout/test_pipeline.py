"""Rollouts ahead of the update (``rollout.max_staleness``): k = 0 starts nothing new, k >= 1 trains batch N at step N
with staleness <= k, resume after SIGTERM trains every batch exactly once, and the set-up cross-checks."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest
import torch

from mimesis_pl.data.audit import BatchAuditCallback
from mimesis_pl.lifecycle import SIGTERM_EXIT_CODE
from mimesis_pl.rollout.pipeline import THREAD_NAME, RolloutPipeline

REPO = Path(__file__).resolve().parents[2]
CONFIG = str(REPO / "configs" / "tiny" / "agent_grpo.yaml")
COMMON = [
    "--model.init_args.rollout.max_new_tokens=16",
    "--model.init_args.rollout.n_samples=2",
    "--trainer.max_steps=4",
]


def _fit(tmp_path: Path, name: str, *extra: str) -> int:
    from mimesis_pl.cli import main

    audit = json.dumps(
        {"class_path": "mimesis_pl.data.audit.BatchAuditCallback", "init_args": {"path": str(tmp_path / name)}}
    )
    return main(
        ["fit", "--config", CONFIG, *COMMON, f"--trainer.logger.init_args.save_dir={tmp_path / name}-runs"]
        + [f"--trainer.callbacks+={audit}", *extra]
    )


def _digests(path: Path) -> list[str]:
    return [json.loads(line)["digest"] for line in path.read_text().splitlines()]


def _scalars(save_dir: Path, tag: str) -> list[float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = sorted((save_dir / "tiny_agent_grpo").iterdir())[-1]
    events = EventAccumulator(str(run))
    events.Reload()
    return [e.value for e in events.Scalars(tag)]


def _no_rollout_thread() -> bool:
    return not any(t.name == THREAD_NAME for t in threading.enumerate())


def test_k0_starts_no_pipeline_and_k1_trains_the_same_batches_one_step_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)

    def refuse(*args, **kwargs):
        raise AssertionError("max_staleness 0 must not start a rollout pipeline")

    with monkeypatch.context() as m:
        m.setattr(RolloutPipeline, "__init__", refuse)
        _fit(tmp_path, "k0", "--model.init_args.validation=null")
    assert _fit(tmp_path, "k1", "--model.init_args.rollout.max_staleness=1") in (0, None)
    assert _no_rollout_thread()
    assert _digests(tmp_path / "k1") == _digests(tmp_path / "k0")  # batch N trained at step N whatever k is
    # B_0 was sampled on the first weights; every later batch one RL step before the update that trains it
    assert _scalars(tmp_path / "k1-runs", "async/staleness_max") == [0.0, 1.0, 1.0, 1.0]
    assert len(_scalars(tmp_path / "k1-runs", "train/behaviour_weight_mean")) == 4
    assert len(_scalars(tmp_path / "k1-runs", "val/core")) >= 2  # validation drained the pipeline and ran


def test_k2_staleness_is_bounded_by_two(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    _fit(tmp_path, "k2", "--model.init_args.rollout.max_staleness=2", "--model.init_args.validation=null")
    assert _scalars(tmp_path / "k2-runs", "async/staleness_max") == [0.0, 1.0, 2.0, 2.0]
    assert _no_rollout_thread()


def test_sigterm_mid_step_then_resume_trains_every_batch_once_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    no_val = "--model.init_args.validation=null"
    _fit(tmp_path, "straight", "--model.init_args.rollout.max_staleness=1", no_val, "--trainer.max_steps=5")

    record = BatchAuditCallback.on_train_batch_start

    def kill_during_batch_2(self, trainer, pl_module, batch, batch_idx):
        record(self, trainer, pl_module, batch, batch_idx)
        if batch_idx == 2:  # mid-step: batch 3's rollouts are not submitted yet, batch 2's are done
            os.kill(os.getpid(), signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(BatchAuditCallback, "on_train_batch_start", kill_during_batch_2)
        rc = _fit(tmp_path, "first", "--model.init_args.rollout.max_staleness=1", no_val, "--trainer.max_steps=5")
    assert rc == SIGTERM_EXIT_CODE
    assert _no_rollout_thread()  # the job in flight was cancelled and the loop's thread ended
    (ckpt,) = (tmp_path / "first-runs").rglob("sigterm-step=*.ckpt")
    state = torch.load(ckpt, weights_only=False)["rl_stages"]["rollout"]["pipeline"]
    assert state == {"max_staleness": 1, "inflight": [[0, 3]]}  # the in-flight batch is recorded
    _fit(
        tmp_path,
        "second",
        "--model.init_args.rollout.max_staleness=1",
        no_val,
        "--trainer.max_steps=5",
        f"--ckpt_path={ckpt}",
    )
    first, second = _digests(tmp_path / "first"), _digests(tmp_path / "second")
    assert len(first) == 3
    assert first + second == _digests(tmp_path / "straight")


def _final_weights(save_dir: Path) -> dict[str, torch.Tensor]:
    (ckpt,) = [p for p in save_dir.rglob("*.ckpt") if not p.name.startswith("sigterm")]
    return torch.load(ckpt, weights_only=False)["state_dict"]


def test_resume_inflight_restore_is_bit_identical_to_the_run_that_was_not_stopped(tmp_path, monkeypatch):
    import hashlib

    from mimesis_pl.modules.agent_grpo import AgentGRPO

    monkeypatch.chdir(REPO)
    trained: list[str] = []  # per RL step: a digest of the trained tokens and their rollout-time log-probs
    update = AgentGRPO.update

    def recording(self, step):
        t = step.experience.tensors
        trained.append(
            hashlib.sha256(t["input_ids"].numpy().tobytes() + t["rollout_logprobs"].numpy().tobytes()).hexdigest()
        )
        return update(self, step)

    monkeypatch.setattr(AgentGRPO, "update", recording)
    # one sequence per generate call: no timing-dependent micro-batch (the numerics of padded attention)
    common = ["--model.init_args.rollout.max_staleness=1", "--model.init_args.validation=null"]
    common += ["--trainer.max_steps=4", "--model.init_args.rollout.engine.init_args.max_batch_size=1"]
    # the untrained tiny policy earns no reward: weight decay is what moves its weights from step to step
    common += ["--model.init_args.optim.lr=0.01", "--model.init_args.optim.weight_decay=1.0"]
    restore = "--model.init_args.rollout.resume_inflight=restore"
    _fit(tmp_path, "straight", *common, restore)
    straight, trained[:] = list(trained), []

    record = BatchAuditCallback.on_train_batch_start

    def kill_during_batch_1(self, trainer, pl_module, batch, batch_idx):
        record(self, trainer, pl_module, batch, batch_idx)
        if batch_idx == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(BatchAuditCallback, "on_train_batch_start", kill_during_batch_1)
        assert _fit(tmp_path, "first", *common, restore) == SIGTERM_EXIT_CODE
    (ckpt,) = (tmp_path / "first-runs").rglob("sigterm-step=*.ckpt")
    state = torch.load(ckpt, weights_only=False)["rl_stages"]["rollout"]["pipeline"]
    assert state["inflight"] == [[0, 2]] and isinstance(state["rollouts"], bytes)  # batch 2's episodes, kept
    first, trained[:] = list(trained), []
    _fit(tmp_path, "restored", *common, restore, f"--ckpt_path={ckpt}")
    restored, trained[:] = list(trained), []
    # the same checkpoint without its rollouts (as one saved with regenerate): batch 2 rolls out again
    full = torch.load(ckpt, weights_only=False)
    del full["rl_stages"]["rollout"]["pipeline"]["rollouts"]
    torch.save(full, tmp_path / "without-rollouts.ckpt")
    _fit(tmp_path, "regenerated", *common, restore, f"--ckpt_path={tmp_path / 'without-rollouts.ckpt'}")
    regenerated = list(trained)
    assert len(first) == 2 and first + restored == straight  # the same tokens trained at every step
    assert _digests(tmp_path / "first") + _digests(tmp_path / "restored") == _digests(tmp_path / "straight")
    # regenerating batch 2 under the loaded weights samples other episodes: the restore is what makes it identical
    assert regenerated[0] != straight[2]
    final, resumed = _final_weights(tmp_path / "straight-runs"), _final_weights(tmp_path / "restored-runs")
    assert final.keys() == resumed.keys() and all(torch.equal(final[k], resumed[k]) for k in final)


def test_set_up_cross_checks_name_the_key():
    from mimesis_pl.modules.settings import PPOSettings
    from mimesis_pl.rollout.engines import HFEngineSettings
    from mimesis_pl.stages.ahead import check_ahead_settings, check_shim_capacity

    with pytest.raises(ValueError, match="ppo.behaviour_correction: none .*max_staleness=1"):
        PPOSettings(behaviour_correction="none").correction_for(1)
    with pytest.raises(ValueError, match="rollout.max_staleness"):
        from mimesis_pl.rollout.settings import RolloutSettings

        RolloutSettings(max_staleness=-1)

    class _Sleepy:
        enable_sleep_mode = True
        generates_on_policy_weights = False

    class _Rollout:
        max_staleness = 1
        engine = _Sleepy()

    with pytest.raises(ValueError, match="engine.init_args.enable_sleep_mode"):
        check_ahead_settings(_Rollout())
    _Rollout.engine = HFEngineSettings()
    check_ahead_settings(_Rollout())
    with pytest.raises(ValueError, match="shim store"):
        check_shim_capacity(1, 4096, "data.init_args.batch_size × rollout.n_samples")


def test_a_data_module_that_cannot_look_ahead_is_refused(tmp_path):
    from mimesis_pl.rollout.settings import AdvantageSettings, RolloutSettings
    from mimesis_pl.stages.agent import RolloutStage

    stage = RolloutStage(RolloutSettings(max_staleness=1), AdvantageSettings())

    class _Trainer:
        datamodule = object()
        world_size = 1

    class _Module:
        trainer = _Trainer()
        lora = None

    with pytest.raises(ValueError, match="max_staleness=1 .*batch_rows"):
        stage.start_loop(_Module(), max_staleness=1, wait_timeout_s=None)


def test_an_error_in_a_background_job_surfaces_and_the_thread_ends(tmp_path, monkeypatch):
    from mimesis_pl.rollout.loop import MultiTurnRollout

    monkeypatch.chdir(REPO)

    async def users_down(self, rows, n_samples, group_ids=None, seeds=None):
        raise ConnectionError("simulated users are down")

    monkeypatch.setattr(MultiTurnRollout, "run_batch", users_down)
    with pytest.raises(ConnectionError, match="users are down"):
        _fit(tmp_path, "down", "--model.init_args.rollout.max_staleness=1", "--model.init_args.validation=null")
    assert _no_rollout_thread()


def test_pipeline_wait_timeout_names_the_key():
    import asyncio

    pipeline = RolloutPipeline(wait_timeout_s=0.05)
    try:
        from mimesis_pl.rollout.pipeline import BatchPos

        pipeline.submit(BatchPos(0, 0), [{"a": 1}], 0, asyncio.sleep(5))
        with pytest.raises(RuntimeError, match="rollout.wait_timeout_s=0.05"):
            pipeline.take(BatchPos(0, 0), [{"a": 1}])
        pipeline.submit(BatchPos(0, 1), [{"a": 2}], 0, asyncio.sleep(0))
        with pytest.raises(RuntimeError, match="other prompts than Lightning's batch"):
            pipeline.take(BatchPos(0, 1), [{"a": 3}])
    finally:
        pipeline.stop()
    assert _no_rollout_thread()


def test_lookahead_rows_are_what_the_loader_yields_on_every_rank():
    from mimesis_pl.data.batching import ResumableBucketBatchSampler
    from mimesis_pl.data.prompts import RankShareBatchSampler

    for rank in (0, 1):
        inner = ResumableBucketBatchSampler([1] * 20, batch_size=4, seed=3)
        sampler = RankShareBatchSampler(inner, rank, 2)
        for epoch in (0, 1):
            sampler.set_epoch(epoch)
            assert sampler.batches(epoch) == list(sampler)


def test_csd_at_k1_writes_the_notes_inside_the_background_job(tmp_path, monkeypatch):
    from mimesis_pl.rollout.coaching import CoachStage

    monkeypatch.chdir(REPO)
    threads = []
    write_notes = CoachStage.write_notes

    async def recording(self, chosen, batch, privileged_source):
        threads.append(threading.current_thread().name)
        return await write_notes(self, chosen, batch, privileged_source)

    def refuse(*args, **kwargs):
        raise AssertionError("at k >= 1 the notes come from the job, not from the trainer's thread")

    monkeypatch.setattr(CoachStage, "write_notes", recording)
    monkeypatch.setattr(CoachStage, "teacher", refuse)
    from mimesis_pl.cli import main

    main(
        ["fit", "--config", str(REPO / "configs" / "tiny" / "agent_csd.yaml"), "--trainer.max_steps=3"]
        + ["--model.init_args.rollout.max_staleness=1", f"--trainer.logger.init_args.save_dir={tmp_path}"]
        + [f"--trainer.default_root_dir={tmp_path}"]
    )
    assert threads and set(threads) == {THREAD_NAME}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = [p.parent for p in tmp_path.rglob("events.out.tfevents.*")]
    events = EventAccumulator(str(run))
    events.Reload()
    assert len(events.Scalars("coach/notes")) == 3 and sum(e.value for e in events.Scalars("coach/notes")) > 0
    assert _no_rollout_thread()


def test_simulator_rl_at_k1_trains_the_same_batches_one_step_stale(tmp_path, monkeypatch):
    from mimesis_pl.cli import main

    monkeypatch.chdir(REPO)

    def fit(name: str, *extra: str) -> None:
        audit = json.dumps(
            {"class_path": "mimesis_pl.data.audit.BatchAuditCallback", "init_args": {"path": str(tmp_path / name)}}
        )
        main(
            ["fit", "--config", str(REPO / "configs" / "tiny" / "simulator_rl.yaml"), "--trainer.max_steps=3"]
            + [f"--trainer.logger.init_args.save_dir={tmp_path / name}-runs", f"--trainer.callbacks+={audit}"]
            + ["--model.init_args.rollout.max_new_tokens=12", *extra]
        )

    def refuse(*args, **kwargs):
        raise AssertionError("max_staleness 0 must not start a rollout pipeline")

    with monkeypatch.context() as m:
        m.setattr(RolloutPipeline, "__init__", refuse)
        fit("k0", "--model.init_args.validation=null")
    fit("k1", "--model.init_args.rollout.max_staleness=1")
    assert _no_rollout_thread()
    assert _digests(tmp_path / "k1") == _digests(tmp_path / "k0")  # batch N trained at step N whatever k is
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = (tmp_path / "k1-runs" / "tiny_simulator_rl").iterdir()
    events = EventAccumulator(str(run))
    events.Reload()
    assert [e.value for e in events.Scalars("async/staleness_max")] == [0.0, 1.0, 1.0]
    assert len(events.Scalars("train/behaviour_weight_mean")) == 3  # the correction is on at k >= 1
    assert len(events.Scalars("val-core/all/score")) == 3  # before training, after step 2 (drained), at the end
    (ckpt,) = (tmp_path / "k1-runs").rglob("*.ckpt")
    state = torch.load(ckpt, weights_only=False)["rl_stages"]["rollout"]["pipeline"]
    assert state == {"max_staleness": 1, "inflight": [[1, 0]]}  # the next epoch's first batch, for a resume
