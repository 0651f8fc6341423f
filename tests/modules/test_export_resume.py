"""A run resumed with ``--ckpt_path`` keeps exporting into an explicit ``dirpath`` (issue 35, item 2)."""

from __future__ import annotations

import json
import os
import signal

from mimesis_pl.cli import main
from mimesis_pl.lifecycle import SIGTERM_EXIT_CODE, RunGuard

from ..conftest import REPO


def test_an_explicit_export_folder_does_not_block_resume(tmp_path, monkeypatch):
    hf = tmp_path / "hf"
    export = json.dumps(
        {"class_path": "mimesis_pl.modules.HFExportCallback", "init_args": {"dirpath": str(hf), "every_n_steps": 2}}
    )
    args = [
        "fit",
        "--config",
        str(REPO / "configs" / "tiny" / "chat_sft.yaml"),
        f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
        f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
        f"--data.init_args.files=[{REPO / 'assets' / 'data' / 'chat_sft' / 'train.jsonl'}]",
        "--trainer.max_steps=4",
        "--trainer.val_check_interval=100",
        "--trainer.enable_checkpointing=false",
        f"--trainer.callbacks=[{export}]",
    ]

    def sigterm_at_step_3(self, trainer, *rest):
        if trainer.global_step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(RunGuard, "on_train_batch_end", sigterm_at_step_3, raising=False)
        assert main(args) == SIGTERM_EXIT_CODE
    assert sorted(p.name for p in hf.iterdir()) == ["step-2"]
    (ckpt,) = (tmp_path / "runs").rglob("sigterm-step=3.ckpt")
    assert main([*args, f"--ckpt_path={ckpt}"]) == 0  # was: FileExistsError, exit 1
    assert sorted(p.name for p in hf.iterdir()) == ["final", "step-2", "step-4"]
    assert main(args) == 2  # a fresh run into the same folder still is refused (A70), in one line (E29)
