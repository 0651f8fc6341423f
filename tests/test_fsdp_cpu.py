"""Sharded training on CPU: FSDP2 through Lightning's ModelParallelStrategy (2 processes, gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch

from .conftest import REPO


def test_sft_trains_sharded_and_exports_a_full_checkpoint(tmp_path):
    strategy = json.dumps(
        {
            "class_path": "lightning.pytorch.strategies.ModelParallelStrategy",
            "init_args": {"data_parallel_size": 2, "tensor_parallel_size": 1, "process_group_backend": "gloo"},
        }
    )
    cmd = [
        sys.executable,
        "-m",
        "mimesis_pl.cli",
        "fit",
        "--config",
        "configs/tiny/chat_sft.yaml",
        "--trainer.devices=2",
        "--trainer.max_steps=3",
        "--trainer.val_check_interval=3",
        f"--trainer.strategy={strategy}",
        f"--trainer.logger.init_args.save_dir={tmp_path}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    export = tmp_path / "tiny_chat_sft" / "version_0" / "hf" / "final"
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(export)  # full weights gathered from the shards
    base = AutoModelForCausalLM.from_pretrained(REPO / "assets" / "tiny-qwen3")
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, base.state_dict()[k])]
    assert changed, "training changed no weight"
