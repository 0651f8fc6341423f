"""What a new user runs into with ``mimesis-pl``: their files kept, stacked configs, fast clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mimesis_pl.cli import main
from mimesis_pl.config_save import MARKER

from .conftest import REPO

CHAT_SFT = REPO / "configs" / "tiny" / "chat_sft.yaml"
TRAIN_JSONL = REPO / "assets" / "data" / "chat_sft" / "train.jsonl"


def _no_step(config: Path, *extra: str) -> None:
    """Set-up only (config saving happens there), no optimiser step."""
    main(
        [
            "fit", "--config", str(config), "--trainer.logger", "false", "--trainer.max_steps", "0",
            f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}", f"--data.init_args.files=[{TRAIN_JSONL}]",
            *extra,
        ]
    )


def test_fit_without_logger_keeps_the_users_config_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(CHAT_SFT, tmp_path / "config.yaml")
    before = (tmp_path / "config.yaml").read_bytes()
    _no_step(tmp_path / "config.yaml")
    assert (tmp_path / "config.yaml").read_bytes() == before


def test_fit_without_logger_rewrites_the_config_it_wrote_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(f"{MARKER}\nseed_everything: 99\n")  # an earlier run's
    _no_step(CHAT_SFT)
    written = (tmp_path / "config.yaml").read_text()
    assert written.startswith(MARKER) and "max_steps: 0" in written and "seed_everything: 0" in written
