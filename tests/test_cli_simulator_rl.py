"""Simulator RL end to end through ``mimesis-pl fit``: tiny model, scripted judge and support agent, HF engine."""

from __future__ import annotations

import json

from mimesis_pl.cli import main

from .conftest import REPO

CONFIG = str(REPO / "configs" / "tiny" / "simulator_rl.yaml")


def scalars(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_simulator_rl_trains_one_step_and_validates_before_and_after(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_steps=1",
            "--model.init_args.rollout.max_new_tokens=16",
            "--model.init_args.validation.val_every_n_steps=1",
            "--trainer.enable_checkpointing=false",
        ]
    )
    run = next((tmp_path / "tiny_simulator_rl").iterdir())
    logged = scalars(run)
    assert len(logged["train/updates"]) == 1  # one RL step
    assert any(k.startswith("rollout/") and k.endswith("/reward") and k.count("/") == 2 for k in logged)  # per task
    sources = {json.loads(line)["data_source"] for line in (REPO / "assets/data/simulator_rl/val.jsonl").open()}
    for source in sources:  # validation runs every data_source, before training and after the step
        failed = logged[f"val-aux/{source}/judge_failed/mean@1"]
        assert len(failed) == 2, source
        if not any(failed):  # a row whose judge call failed (20% on purpose) is counted, not scored
            assert len(logged[f"val-core/{source}/reward/mean@1"]) == 2, source
    for key in (
        "val-core/all/score",
        "val-core/all/format_correct",
        "val-core/all/judge_failed_rate",
        "rollout/judge_failed_rate",
        "all/format_correct",
        "train/advantage_abs_mean",
    ):
        assert key in logged, key
    dumped = {p.name for p in (run / "conversations").glob("*.json")}
    # 23 val rows: fantom 2, usersim-behavior 3, userllm 2, every other data_source 1
    assert "usersim-behavior-113.json" in dumped and len(dumped) == len(sources) + 4
    record = json.loads((run / "conversations" / "hitom-103.json").read_text())
    assert record["data_source"] == "hitom" and record["messages"][0]["role"] == "system"
