"""Two runs told to use one run folder: the second is refused at start (issue 35, item 3; decision D21)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mimesis_pl.cli import main
from mimesis_pl.run_folder import LOCK_NAME, RunFolderInUse, claim_run_folder

from .conftest import REPO


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_folder_claimed_by_a_live_process_is_refused_and_a_dead_ones_claim_is_taken_over(tmp_path):
    lock = claim_run_folder(tmp_path / "run")
    assert json.loads(lock.read_text()) == {"pid": os.getpid()}
    assert claim_run_folder(tmp_path / "run") == lock  # our own claim (a second stage of this process)
    other = _sleeper()
    try:
        lock.write_text(json.dumps({"pid": other.pid}))
        with pytest.raises(RunFolderInUse, match=rf"another run still going \(pid {other.pid}\)"):
            claim_run_folder(tmp_path / "run")
    finally:
        other.kill()
        other.wait()
    claim_run_folder(tmp_path / "run")  # the other run is gone (killed): its claim is stale
    assert json.loads(lock.read_text()) == {"pid": os.getpid()}


def test_fit_into_a_run_folder_another_run_is_using_exits_2_before_training(tmp_path, capsys):
    args = [
        "fit",
        "--config",
        str(REPO / "configs" / "tiny" / "chat_sft.yaml"),
        f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
        "--trainer.logger.init_args.version=shared",
        f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
        f"--data.init_args.files=[{REPO / 'assets' / 'data' / 'chat_sft' / 'train.jsonl'}]",
        "--trainer.max_steps=1",
        "--trainer.val_check_interval=100",
        "--trainer.enable_checkpointing=false",
    ]
    folder = tmp_path / "runs" / "tiny_chat_sft" / "shared"
    folder.mkdir(parents=True)
    other = _sleeper()
    try:
        (folder / LOCK_NAME).write_text(json.dumps({"pid": other.pid}))
        assert main(args) == 2
    finally:
        other.kill()
        other.wait()
    err = capsys.readouterr().err
    assert f"{folder} is the run folder of another run still going (pid {other.pid})" in err
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME]  # nothing written: no config.yaml, no events
    assert main(args) == 0  # that run is gone: its folder can be used
    assert not (folder / LOCK_NAME).exists()  # released at the end
