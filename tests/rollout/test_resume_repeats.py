"""A resumed RL ``fit`` repeats the uninterrupted run: every logged non-timing scalar is equal (issue 35, item 1).

Three tiny GRPO runs of four steps: one straight through (checkpointing every two steps), one stopped by SIGTERM
after step 2 and resumed from its SIGTERM checkpoint, and one resumed from the straight run's step-2 checkpoint as a
run killed with ``kill -9`` after that checkpoint would be. Episode sampling seeds are derived from the run seed,
the group id (step, batch, row) and the sample (decision D20), so no random state has to survive the stop.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from mimesis_pl.lifecycle import SIGTERM_EXIT_CODE, RunGuard

from ..conftest import REPO

CONFIG = str(REPO / "configs" / "tiny" / "agent_grpo.yaml")
STEPS = 4


def _fit(out: Path, *extra: str) -> int:
    from mimesis_pl.cli import main

    return main(_fit_args(out, *extra))


def _scalars(out: Path) -> dict[tuple[str, int], float]:
    """Every non-timing scalar of every run folder under ``out``, by (tag, step); a later folder wins a clash."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    values: dict[tuple[str, int], float] = {}
    for run in sorted((out / "tiny_agent_grpo").iterdir(), key=lambda p: int(p.name.split("_")[-1])):
        events = EventAccumulator(str(run), size_guidance={"scalars": 0})
        events.Reload()
        for tag in events.Tags()["scalars"]:
            if not tag.startswith("time/") and tag != "hp_metric":  # hp_metric: the logger's placeholder
                values.update({(tag, e.step): e.value for e in events.Scalars(tag)})
    return values


def _sigterm_after_step(step: int):
    def hook(self, trainer, *args):
        if trainer.global_step == step:
            os.kill(os.getpid(), signal.SIGTERM)

    return hook


def test_a_resumed_fit_logs_what_the_uninterrupted_run_logs(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    every_two = json.dumps(
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(tmp_path / "ckpt"), "every_n_train_steps": 2, "save_top_k": -1},
        }
    )
    assert _fit(tmp_path / "straight", f"--trainer.callbacks+={every_two}") == 0
    straight = _scalars(tmp_path / "straight")
    assert max(step for tag, step in straight if tag == "rollout/episode_reward_mean") == STEPS - 1

    with monkeypatch.context() as m:
        m.setattr(RunGuard, "on_train_batch_end", _sigterm_after_step(2), raising=False)
        assert _fit(tmp_path / "sigterm") == SIGTERM_EXIT_CODE
    (stopped,) = (tmp_path / "sigterm").rglob("sigterm-step=2.ckpt")
    assert _fit(tmp_path / "sigterm", f"--ckpt_path={stopped}") == 0
    _assert_repeats(_scalars(tmp_path / "sigterm"), straight)

    (killed,) = (tmp_path / "ckpt").glob("*step=2.ckpt")
    assert _fit(tmp_path / "killed", f"--ckpt_path={killed}") == 0
    resumed = _scalars(tmp_path / "killed")
    assert {step for tag, step in resumed if tag == "rollout/episode_reward_mean"} == {2, 3}
    _assert_repeats(resumed, {key: value for key, value in straight.items() if key[1] >= 2})


def _assert_repeats(resumed: dict[tuple[str, int], float], straight: dict[tuple[str, int], float]) -> None:
    """Equal values wherever both logged; every training scalar logged by both.

    ``val/*`` is logged once per validation, but Lightning logs a step-logged value again at each later step of
    the epoch, so the uninterrupted run also holds copies that a run started after that validation cannot.
    """
    assert {k: v for k, v in resumed.items() if k in straight} == {k: straight[k] for k in resumed if k in straight}
    assert {k for k in resumed if not k[0].startswith("val/")} == {k for k in straight if not k[0].startswith("val/")}
    assert set(resumed) <= set(straight)


def _fit_args(out: Path, *extra: str) -> list[str]:
    return [
        "fit",
        "--config",
        CONFIG,
        "--model.init_args.rollout.max_new_tokens=16",
        "--model.init_args.rollout.n_samples=2",
        "--model.init_args.validation.max_prompts=2",
        f"--trainer.max_steps={STEPS}",
        f"--trainer.logger.init_args.save_dir={out}",
        *extra,
    ]


def test_a_fit_killed_with_sigkill_resumes_to_the_uninterrupted_runs_values(tmp_path, monkeypatch):
    """The same with a real ``kill -9`` of a ``mimesis-pl fit`` process, once its step-3 checkpoint exists (so the
    step-2 one is whole), resumed from step 2."""
    import subprocess
    import sys
    import time

    monkeypatch.chdir(REPO)
    every_step = json.dumps(
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(tmp_path / "ckpt"), "every_n_train_steps": 1, "save_top_k": -1},
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "mimesis_pl.cli", *_fit_args(tmp_path / "killed", f"--trainer.callbacks+={every_step}")],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while not list((tmp_path / "ckpt").glob("*step=3.ckpt")) and process.poll() is None:
            assert time.monotonic() < deadline, "no step-3 checkpoint within 240 s"
            time.sleep(0.05)
    finally:
        process.kill()  # SIGKILL: nothing of the run's state is saved on the way out
        process.wait()
    (killed,) = (tmp_path / "ckpt").glob("*step=2.ckpt")
    assert _fit(tmp_path / "resumed", f"--ckpt_path={killed}") == 0
    assert _fit(tmp_path / "straight") == 0
    straight = _scalars(tmp_path / "straight")
    resumed = _scalars(tmp_path / "resumed")
    assert {step for tag, step in resumed if tag == "rollout/episode_reward_mean"} == {2, 3}
    _assert_repeats(resumed, {key: value for key, value in straight.items() if key[1] >= 2})
