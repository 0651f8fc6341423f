"""The learning study's pure pieces: arm configs differ from the main job only where the arm does."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from .conftest import REPO
from .test_configs import ParseOnlyCLI

spec = importlib.util.spec_from_file_location("learning_study", REPO / "bench" / "learning_study.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)


def _classes(config):
    return [c["class_path"].rsplit(".", 1)[-1] for c in config["trainer"]["callbacks"]]


def test_arm_configs_change_only_the_arm():
    base = yaml.safe_load((REPO / "configs" / "agent_csd.yaml").read_text())
    csd = study.arm_config(base, "csd", seed=2, steps=5, save_dir="/tmp/x")
    grpo = study.arm_config(base, "grpo", seed=2, steps=5, save_dir="/tmp/x")
    placebo = study.arm_config(base, "csd_placebo", seed=2, steps=5, save_dir="/tmp/x")
    assert base["trainer"]["max_steps"] != 5  # base untouched
    assert (csd["seed_everything"], csd["trainer"]["max_steps"]) == (2, 5)
    assert "coaching" in csd["model"]["init_args"] and "coaching" not in grpo["model"]["init_args"]
    assert "ModelCheckpoint" not in _classes(csd)
    assert grpo["model"]["class_path"].endswith("AgentGRPO") and "csd" not in grpo["model"]["init_args"]
    assert placebo["model"]["init_args"]["coaching"]["placebo_only"] is True
    # everything else equal: data, rollout, optimiser
    for cfg in (grpo, placebo):
        assert cfg["data"] == csd["data"]
        assert cfg["model"]["init_args"]["rollout"] == csd["model"]["init_args"]["rollout"]
        assert cfg["model"]["init_args"]["optim"] == csd["model"]["init_args"]["optim"]


@pytest.mark.parametrize("arm", study.ARMS[1:])
def test_arm_configs_parse_and_start_from_the_main_jobs_checkpoint(arm, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    base = yaml.safe_load((REPO / "configs" / "agent_csd.yaml").read_text())
    path = tmp_path / f"{arm}.yaml"
    path.write_text(yaml.safe_dump(study.arm_config(base, arm, seed=0, steps=2, save_dir=str(tmp_path))))
    cli = ParseOnlyCLI(args=["--config", str(path)], run=False)
    assert cli.config["model"]["init_args"]["policy"]["model_path"] == study.start_model_of(base)
    assert (REPO / study.start_model_of(base) / "config.json").is_file()


def test_scores_and_intervals():
    trials = [
        {"status": "scored", "reward": 1.0, "key": {"task_id": "a"}},
        {"status": "scored", "reward": 0.5, "key": {"task_id": "a"}},
        {"status": "unscored", "reward": None, "key": {"task_id": "a"}},
        {"status": "scored", "reward": 0.0, "key": {"task_id": "b"}},
    ]
    scores = study.per_task_scores(trials)
    assert scores == {"a": {"reward": 0.75, "success": 0.5}, "b": {"reward": 0.0, "success": 0.0}}
    s = study.summarise([scores, {"a": {"reward": 0.25, "success": 0.0}, "b": {"reward": 0.0, "success": 0.0}}])
    assert s["reward"]["mean"] == (0.5 + 0.0) / 2 and s["tasks"] == 2 and s["seeds"] == 2
    lo, hi = study.bootstrap_ci([0.0, 1.0, 0.5, 0.5])
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    assert study.bootstrap_ci([0.3] * 5) == (0.3, 0.3)
    assert study.quarter_means([0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0]) == (0.0, 2.0)
