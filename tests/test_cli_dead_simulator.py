"""A job whose user simulator is down stops with an error naming it, exports nothing and keeps no best checkpoint.

Before A76: rc 0, 3 of 4 training episodes and 2 of 2 validation episodes ``user_error``, ``hf/final`` exported,
``val/reward = val/core = 0.0`` over failed episodes and ``best.json`` recording 0.0 at step 0.
"""

from __future__ import annotations

import socket

from mimesis_pl.cli import ROLLOUT_FAILURE_EXIT_CODE, main

from .conftest import REPO

# The main job's agent: it talks to the user from its first turn (the tiny random model rarely does).
MAIN_JOB = str(REPO / "configs" / "agent_csd.yaml")
PERSUADE = REPO / "assets" / "data" / "persuade"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def run(tmp_path, *extra):
    return main(
        [
            "fit",
            "--config",
            MAIN_JOB,
            f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            f"--trainer.default_root_dir={tmp_path}",
            "--model.init_args.rollout.users=mimesis_pl.rollout.OpenAIUserSettings",
            f"--model.init_args.rollout.users.upstream_url=http://127.0.0.1:{closed_port()}/v1",
            "--model.init_args.rollout.users.model=my-simulator",
            "--trainer.max_steps=2",
            "--data.init_args.batch_size=2",
            "--model.init_args.rollout.n_samples=2",
            "--model.init_args.rollout.episode.max_turns=3",
            *extra,
        ]
    )


def test_a_dead_simulator_stops_the_run_at_its_first_validation(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    validation = (
        "--model.init_args.validation={val_before_train: true, val_every_n_steps: 1, max_prompts: 2, "
        "best_metric: val/core}"
    )
    val_files = f"--data.init_args.val_files=[{PERSUADE / 'test' / '*.parquet'}]"
    assert run(tmp_path, validation, val_files) == ROLLOUT_FAILURE_EXIT_CODE
    err = capsys.readouterr().err
    assert "episodes in the validation after 0 steps failed (user_error" in err
    assert "the user simulator 'my-simulator' at http://127.0.0.1:" in err
    assert not list(tmp_path.rglob("best.json")) and not list(tmp_path.rglob("best-step=*.ckpt"))
    assert not list(tmp_path.rglob("hf"))


def test_without_validation_it_stops_within_the_first_step(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert run(tmp_path) == ROLLOUT_FAILURE_EXIT_CODE
    err = capsys.readouterr().err
    assert "episodes in step 0 failed (user_error" in err
    assert not list(tmp_path.rglob("hf"))
