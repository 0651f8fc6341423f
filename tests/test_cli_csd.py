"""The CSD job end to end through ``mimesis-pl fit``: real shim, scripted users and coach, HF engine."""

from __future__ import annotations

import json
import math

import pytest
import torch

from mimesis_pl.cli import main

from .conftest import REPO

CONFIG = str(REPO / "configs" / "tiny" / "agent_csd.yaml")


def scalars(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_csd_job_trains_with_a_live_gate_and_resumes_with_its_placebo_pool(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    # the config checkpoints every 2 steps into the run folder
    main(["fit", "--config", CONFIG, f"--trainer.logger.init_args.save_dir={tmp_path / 'a'}", "--trainer.max_steps=2"])
    run = next((tmp_path / "a" / "tiny_agent_csd").iterdir())
    first = scalars(run)
    # CSD is really on: notes were made, tokens coached, and the sdar gate is not silently zero
    assert sum(first["coach/made"]) > 0
    assert max(first["train/csd/tokens"]) > 0
    assert max(first["train/csd/gate_mean"]) > 0
    for tag in (
        "train/csd/gate_active_ratio",
        "train/csd/teacher_gap_mean",
        "csd/coached_token_fraction",
        "train/csd/placebo_share",
        "coach/leaked",
        "coach/skipped_none",
        "rollout/episode_reward_mean",
    ):
        assert tag in first, tag

    # Every coached turn is saved in the run folder, and `mimesis-pl data notes` reads it (A77).
    notes = [json.loads(line) for line in (run / "coach_notes.jsonl").read_text().splitlines()]
    assert {n["step"] for n in notes} == {0, 1}
    made = [n for n in notes if n["status"] == "ok"]
    assert len(made) == sum(first["coach/made"]) and all(n["note"] and n["episode_id"] for n in made)
    assert sum(n["dropped_as_leak"] for n in notes) == sum(first["coach/leaked"])
    assert set(notes[0]) >= {"step", "episode_id", "task", "turn", "status", "note", "dropped_as_leak", "placebo"}
    capsys.readouterr()
    assert main(["data", "notes", str(run), "--step", "1", "--n", "1"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{len(notes)} coached turns over steps 0–1") and "note:" in shown

    ckpt = next((run / "checkpoints").glob("*step=2*.ckpt"))
    state = torch.load(ckpt, weights_only=False)
    coach_state = state["rl_stages"]["coach"]  # the coach stage's state, saved by the module
    saved_pool = len(coach_state["placebo_pool"]["notes"])
    assert saved_pool == first["coach/placebo_pool"][-1] > 0

    main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path / 'b'}",
            "--trainer.max_steps=3",
            f"--ckpt_path={ckpt}",
        ]
    )
    resumed = scalars(next((tmp_path / "b" / "tiny_agent_csd").iterdir()))
    assert len(resumed["train/updates"]) == 1  # only step 3 ran
    # the pool came back from the checkpoint and grew by this step's notes
    assert resumed["coach/placebo_pool"][0] == min(256, saved_pool + resumed["coach/made"][0])


@pytest.mark.parametrize("mode", ["prefix_cache", "packed"])
def test_csd_job_trains_with_the_distill_estimator(tmp_path, monkeypatch, mode):
    """``estimator: distill`` end to end on CPU: the teacher forward returns its top-k, the update's student forward
    scores the same ids, and the top-k KL is a live, finite term on the coached tokens (one step)."""
    monkeypatch.chdir(REPO)
    csd = "--model.init_args.csd"
    main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_steps=1",
            "--model.init_args.validation.val_before_train=false",
            f"{csd}.estimator=distill",
            f"{csd}.distill_top_k=4",
            f"{csd}.teacher_mode={mode}",
        ]
    )
    got = scalars(next((tmp_path / "tiny_agent_csd").iterdir()))
    assert got["train/csd/tokens"][0] > 0
    loss = got["train/csd/loss"][0]
    assert math.isfinite(loss) and loss > 0  # a KL: 0 only if the coached teacher equals the student everywhere
    assert math.isfinite(got["train/grad_norm"][0])
