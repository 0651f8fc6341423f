"""RL under data parallelism on CPU: FSDP2 (``ModelParallelStrategy``) over 2 gloo processes.

- the gradient of one update on a fixed experience is the same on 1 and 2 processes (global
  token-mean: batch sizes are global);
- ``mimesis-pl fit`` of the tiny GRPO job on 2 processes: each step's prompts are the 1-process
  run's, split between the ranks; the same optimiser steps; validation before training and every
  2 steps; the best checkpoint kept;
- ``mimesis-pl fit`` of the tiny CSD job on 2 processes (HF engine with a gathered copy, no vLLM).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import torch
import yaml

from mimesis_pl.data.audit import batch_digest
from mimesis_pl.data.prompts import GymPromptDataModule

from .conftest import REPO

STRATEGY = json.dumps(
    {
        "class_path": "lightning.pytorch.strategies.ModelParallelStrategy",
        "init_args": {"data_parallel_size": 2, "tensor_parallel_size": 1, "process_group_backend": "gloo"},
    }
)
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, check=False, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


def _fit(config: str, save_dir, *overrides: str) -> None:
    _run(
        [
            sys.executable,
            "-m",
            "mimesis_pl.cli",
            "fit",
            "--config",
            config,
            "--trainer.devices=2",
            f"--trainer.strategy={STRATEGY}",
            f"--trainer.logger.init_args.save_dir={save_dir}",
            *overrides,
        ]
    )


def _scalars(run) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_one_update_has_the_same_gradient_on_one_and_two_processes(tmp_path):
    script = REPO / "tests" / "rl" / "dp_fixed_update.py"
    spec = importlib.util.spec_from_file_location("dp_fixed_update", script)
    fixed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixed)
    fixed.update(1, str(tmp_path / "one.pt"))  # one process: here
    _run([sys.executable, str(script), "--devices", "2", "--out", str(tmp_path / "two.pt")])
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert one.keys() == two.keys() and len(one) == 25
    assert sum(g.norm() ** 2 for g in one.values()) ** 0.5 > 0.1  # a real update, not a zero gradient
    for name, grad in one.items():
        assert torch.allclose(grad, two[name], rtol=1e-4, atol=1e-7), name


def test_grpo_on_two_processes_takes_global_batches_validates_and_keeps_the_best(tmp_path, monkeypatch):
    audit = tmp_path / "audit.jsonl"
    audit_cb = json.dumps(
        {"class_path": "mimesis_pl.data.audit.BatchAuditCallback", "init_args": {"path": str(audit), "all_ranks": True}}
    )
    # 4 prompts x 2 samples per step, 4 trajectories per optimiser step: 2 optimiser steps per step;
    # max_steps counts optimiser steps, so 4 of them are 2 training steps.
    _fit(
        "configs/tiny/agent_grpo.yaml",
        tmp_path,
        "--data.init_args.batch_size=4",
        "--model.init_args.ppo.mini_batch_size=4",
        "--trainer.max_steps=4",
        "--model.init_args.rollout.n_samples=2",
        "--model.init_args.rollout.max_new_tokens=8",
        "--model.init_args.rollout.episode.max_turns=2",
        f"--trainer.callbacks+={audit_cb}",
    )

    # What one process takes in its first two steps: the same DataModule with world size 1.
    monkeypatch.chdir(REPO)  # rows carry their file path as the job sees it
    dm = GymPromptDataModule(files=["assets/data/gyms/train/*.parquet"], batch_size=4)
    dm.setup("fit")
    batches = iter(dm.train_dataloader())
    one_process = [[batch_digest([row]) for row in next(batches)] for _ in range(2)]
    ranks = [
        [json.loads(line) for line in (tmp_path / f"audit.rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)
    ]
    assert [len(r) for r in ranks] == [2, 2]
    assert [a["rows"] + b["rows"] for a, b in zip(*ranks)] == one_process

    run = tmp_path / "tiny_agent_grpo" / "version_0"
    s = _scalars(run)
    assert s["train/updates"] == [2.0, 2.0]  # as on one process: 8 trajectories / 4 per optimiser step
    assert s["rollout/prompts_global"] == [4.0, 4.0]
    assert s["val/steps_done"] == [0.0, 2.0]  # before training, then every 2 steps (the last)
    assert s["val/episodes"] == [5.0, 5.0]  # max_prompts 5, gathered over both ranks (3 + 2)
    for tag in ("val/reward", "val/core", "val/success_rate", "val/turns_mean"):
        assert len(s[tag]) == 2, tag
    assert any(tag.startswith("val/status/") for tag in s)
    best = json.loads((run / "checkpoints" / "best.json").read_text())
    assert best["metric"] == "val/core" and (run / "checkpoints" / f"best-step={best['step']}.ckpt").exists()


def test_csd_on_two_processes_trains_with_the_hf_engine(tmp_path):
    config = yaml.safe_load((REPO / "configs" / "tiny" / "agent_csd.yaml").read_text())
    model = config["model"]["init_args"]
    model["rollout"].update(max_new_tokens=64)
    model["rollout"]["episode"].update(max_turns=2)
    model.pop("validation")  # validation on 2 processes is the GRPO test's
    (tmp_path / "csd.yaml").write_text(yaml.safe_dump(config))
    _fit(str(tmp_path / "csd.yaml"), tmp_path, "--trainer.max_steps=2")
    s = _scalars(tmp_path / "tiny_agent_csd" / "version_0")
    assert s["train/updates"] == [1.0, 1.0]
    assert "train/csd/tokens" in s and "coach/made" in s
