"""The CueGym study's pure pieces: arm and variant configs, the probe endpoints, the seed-paired interval."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
import yaml

from .conftest import REPO
from .test_configs import ParseOnlyCLI

spec = importlib.util.spec_from_file_location("cue_study", REPO / "bench" / "cue_study.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)
stats = study.paired_t_interval.__globals__  # study_stats, as the bench imports it


def base():
    return yaml.safe_load((REPO / "configs" / "agent_csd_cue.yaml").read_text())


def test_arms_and_variants_change_only_what_they_name(tmp_path, monkeypatch):
    b = base()
    csd = study.arm_config(b, "csd", "cue", seed=3, steps=6, save_dir="/tmp/x")
    grpo = study.arm_config(b, "grpo", "cue", seed=3, steps=6, save_dir="/tmp/x")
    ref = study.arm_config(b, "csd_ref", "cue", seed=3, steps=6, save_dir="/tmp/x")
    distill = study.arm_config(b, "distill", "cue", seed=3, steps=6, save_dir="/tmp/x")
    dense = study.arm_config(b, "csd", "dense", seed=3, steps=6, save_dir="/tmp/x")
    explicit = study.arm_config(b, "grpo", "explicit", seed=3, steps=6, save_dir="/tmp/x")
    assert b == base()  # the base is untouched
    args = csd["model"]["init_args"]
    assert (args["csd"]["coef"], args["coaching"]["placebo"], args["csd"]["estimator"]) == (0.5, False, "sdar")
    ref_args = ref["model"]["init_args"]
    assert (ref_args["csd"]["coef"], ref_args["coaching"]["placebo"]) == (0.01, True)
    assert distill["model"]["init_args"]["csd"]["estimator"] == "distill"
    assert grpo["model"]["class_path"].endswith("AgentGRPO") and "csd" not in grpo["model"]["init_args"]
    dense_options = dense["model"]["init_args"]["rollout"]["episode"]["gym_options"]
    assert dense_options == {"CueGym": {"answer_rule": "revealed", "reward_rule": "per_reveal"}}
    assert study.eval_gym_options("explicit") == {"CueGym": {"answer_rule": "revealed", "cue_mode": "explicit"}}
    probe = [c for c in explicit["trainer"]["callbacks"] if c["class_path"].endswith("DecisionProbe")][0]
    assert probe["init_args"]["contexts"].endswith("probe/test_explicit.jsonl")
    # apart from what the arm names, csd and csd_ref are the same run
    ref_args["csd"]["coef"], ref_args["coaching"]["placebo"] = 0.5, False
    assert json.dumps(ref["model"]) == json.dumps(csd["model"])
    # every arm's config parses as a job config
    monkeypatch.chdir(REPO)
    for config in (csd, grpo, ref, distill, dense, explicit):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config))
        ParseOnlyCLI(args=["--config", str(path)], run=False)
    with pytest.raises(ValueError, match="variant one of"):
        study.arm_config(b, "csd", "sparse", seed=0, steps=6, save_dir="/tmp/x")


def test_endpoints_read_the_probe_after_the_last_update_and_its_mean():
    curve = [(0, 0.25), (1, 0.3), (2, 0.4), (3, 0.5)]
    got = study.endpoints(curve, 3)
    assert got == {"p_final": 0.5, "p_auc": pytest.approx(0.4), "p_start": 0.25}
    with pytest.raises(ValueError, match="no value after update 4"):
        study.endpoints(curve, 4)


def test_paired_t_interval_hand_worked():
    # diffs 0.1, 0.2, 0.3: mean 0.2, sd 0.1, t(2) = 4.303 -> half-width 4.303 * 0.1 / sqrt(3) = 0.24843
    got = study.paired_t_interval([0.1, 0.2, 0.3])
    assert got["mean"] == pytest.approx(0.2) and got["sd"] == pytest.approx(0.1)
    assert got["ci95"] == pytest.approx((0.2 - 0.248434, 0.2 + 0.248434), abs=1e-5)
    assert math.isnan(study.paired_t_interval([0.1])["ci95"][0])
    # a pilot with sd 0.05 needs ceil((2 * 0.05 / 0.05) ** 2) = 4 seeds for a ±0.05 interval
    assert stats["seeds_needed"](0.05, 0.05) == 4
