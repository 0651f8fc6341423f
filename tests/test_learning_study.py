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


def test_parallel_jobs_give_the_same_report_as_one_job(tmp_path, monkeypatch):
    import argparse
    import json
    import time

    def fake_train(arm, seed, steps, out, *validation):
        time.sleep(0.01 * (3 - seed))  # finish out of order
        run = out / "runs" / f"{arm}_seed{seed}"
        run.mkdir(parents=True, exist_ok=True)
        return run, 1.0

    def fake_evaluate(model, out_dir, seed, tasks, trials):
        bonus = 0.1 if "grpo" in str(out_dir) else 0.0
        return {"t1": {"reward": 0.2 + bonus + seed / 10, "success": 0.0}, "t2": {"reward": 0.4, "success": 1.0}}, 2.0

    monkeypatch.setattr(study, "train", fake_train)
    monkeypatch.setattr(study, "evaluate", fake_evaluate)
    monkeypatch.setattr(study, "scalars", lambda run: {"rollout/episode_reward_mean": [0.1, 0.2]})
    monkeypatch.setattr(study, "plot", lambda results, path: None)
    reports = []
    for jobs in (1, 3):
        out = tmp_path / f"jobs{jobs}"
        args = argparse.Namespace(
            arms=["sft", "grpo"], seeds=[0, 1, 2], steps=2, tasks=None, trials=1, out=str(out), jobs=jobs
        )
        study.run_study(args)
        results = json.loads((out / "results.json").read_text())
        reports.append((results["arms"], results["curves"], list(results["curves"])))
    assert reports[0] == reports[1]
    arms, curves, order = reports[0]
    assert order == ["grpo/seed0", "grpo/seed1", "grpo/seed2"]
    assert arms["grpo"]["reward"]["mean"] > arms["sft"]["reward"]["mean"]
    assert "--jobs 3" in (tmp_path / "jobs3" / "results.md").read_text()


def test_paired_difference_hand_worked():
    # two seeds; per-task means: csd a=0.6, b=0.2, c=1.0; grpo a=0.5, b=0.0, c=1.0 -> differences 0.1, 0.2, 0.0
    csd = [
        {"a": {"reward": 0.4}, "b": {"reward": 0.2}, "c": {"reward": 1.0}},
        {"a": {"reward": 0.8}, "b": {"reward": 0.2}},
    ]
    grpo = [{"a": {"reward": 0.5}, "b": {"reward": 0.0}, "c": {"reward": 1.0}, "d": {"reward": 0.3}}]
    got = study.paired_difference(csd, grpo, "reward")
    assert got["tasks"] == 3  # d is scored by one arm only
    assert abs(got["mean"] - 0.1) < 1e-12
    lo, hi = got["ci95"]
    assert 0.0 - 1e-12 <= lo <= 0.1 <= hi <= 0.2 + 1e-12
    # a constant shift on every task has a zero-width interval, however spread the tasks are
    same = study.paired_difference(
        [{"a": {"reward": 0.9}, "b": {"reward": 0.1}}], [{"a": {"reward": 0.8}, "b": {"reward": 0.0}}], "reward"
    )
    assert abs(same["ci95"][0] - same["ci95"][1]) < 1e-12 and abs(same["mean"] - 0.1) < 1e-12


def test_steps_to_threshold():
    points = [[8, 0.75], [0, 0.4], [4, 0.69]]
    assert study.steps_to_threshold(points, 0.7) == 8
    assert study.steps_to_threshold(points, 0.3) == 0
    assert study.steps_to_threshold(points, 0.9) is None
    assert study.steps_to_threshold([], 0.5) is None


def test_arm_config_with_periodic_held_out_validation():
    base = yaml.safe_load((REPO / "configs" / "agent_csd.yaml").read_text())
    for arm in study.ARMS[1:]:
        cfg = study.arm_config(base, arm, seed=0, steps=8, save_dir="/tmp/x", val_every=4, val_prompts=10)
        val = cfg["model"]["init_args"]["validation"]
        assert (val["val_every_n_steps"], val["val_before_train"], val["max_prompts"]) == (4, True, 10)
        assert cfg["data"]["init_args"]["val_files"] == study.HELD_OUT_FILES
    assert "validation" not in study.arm_config(base, "csd", seed=0, steps=8, save_dir="/tmp/x")["model"]["init_args"]


def test_lapse_split_in_the_report():
    split = {"train/csd/gate_mean/lapse": [0.6, 0.8], "train/csd/gate_mean/steady": []}
    assert study.lapse_pair(split, "gate_mean", ".3f") == "0.700 / —"
    assert study.lapse_pair({}, "gate_mean", ".3f") == "—"


def test_pairs_alternate_arms_seed_by_seed():
    assert study.pair_order(["sft", "grpo", "csd"], [0, 1]) == [
        ("sft", 0),
        ("grpo", 0),
        ("csd", 0),
        ("sft", 1),
        ("grpo", 1),
        ("csd", 1),
    ]


def test_a_stopped_study_resumes_from_its_saved_pairs_and_refuses_other_settings(tmp_path, monkeypatch):
    import argparse
    import json

    calls = []

    def fake_train(arm, seed, steps, out, *validation):
        calls.append((arm, seed))
        run = out / "runs" / f"{arm}_seed{seed}"
        run.mkdir(parents=True, exist_ok=True)
        return run, 1.0

    def fake_evaluate(model, out_dir, seed, tasks, trials):
        return {"t1": {"reward": 0.5 + seed / 10, "success": 0.0}}, 2.0

    monkeypatch.setattr(study, "train", fake_train)
    monkeypatch.setattr(study, "evaluate", fake_evaluate)
    monkeypatch.setattr(study, "scalars", lambda run: {"rollout/episode_reward_mean": [0.1, 0.2]})
    monkeypatch.setattr(study, "plot", lambda results, path: None)

    def args(**kw):
        base = dict(arms=["sft", "grpo"], seeds=[0, 1], steps=2, tasks=None, trials=1, out=str(tmp_path), jobs=1)
        return argparse.Namespace(**{**base, **kw})

    study.run_study(args(seeds=[0]))  # a study stopped after seed 0
    assert calls == [("grpo", 0)]
    first = json.loads((tmp_path / "results.json").read_text())
    study.run_study(args())  # the same command with every seed: seed 0 is read back, not rerun
    assert calls == [("grpo", 0), ("grpo", 1)]
    again = json.loads((tmp_path / "results.json").read_text())
    assert again["curves"]["grpo/seed0"] == first["curves"]["grpo/seed0"]
    # the cost counts the runs read back too: (sft 0 + 2 s, grpo 1 + 2 s) x 2 seeds over 1 slot
    assert again["seconds"]["total"] == 10.0 and again["seconds"]["wall"] < 10.0
    assert "Run time 0.2 min per job slot" in (tmp_path / "results.md").read_text()
    with pytest.raises(SystemExit, match="steps"):
        study.run_study(args(steps=3))


def test_a_partial_report_pairs_only_the_seeds_every_arm_finished(tmp_path, monkeypatch):
    import argparse
    import json

    def fake_train(arm, seed, steps, out, *validation):
        run = out / "runs" / f"{arm}_seed{seed}"
        run.mkdir(parents=True, exist_ok=True)
        return run, 1.0

    def fake_evaluate(model, out_dir, seed, tasks, trials):
        bonus = 0.2 if "grpo" in str(out_dir) else 0.0
        return {"t1": {"reward": 0.3 + bonus, "success": 0.0}, "t2": {"reward": 0.5 + bonus, "success": 1.0}}, 2.0

    monkeypatch.setattr(study, "train", fake_train)
    monkeypatch.setattr(study, "evaluate", fake_evaluate)
    monkeypatch.setattr(study, "scalars", lambda run: {"rollout/episode_reward_mean": [0.1, 0.2]})
    monkeypatch.setattr(study, "plot", lambda results, path: None)

    def args(**kw):
        base = dict(arms=["sft", "grpo"], seeds=[0, 1, 2], steps=2, tasks=None, trials=1, out=str(tmp_path), jobs=1)
        return argparse.Namespace(**{**base, **kw})

    with pytest.raises(SystemExit, match="no seed"):
        study.run_study(args(partial=True))
    study.run_study(args(seeds=[0, 1]))  # seeds 0 and 1 finish; then seed 2's sft arm only
    study.run_study(args(seeds=[2], arms=["sft"]))
    got = study.run_study(args(partial=True))
    assert got["settings"]["seeds"] == [0, 1] and got["settings"]["planned_seeds"] == [0, 1, 2]
    assert got["paired"]["grpo - sft"]["reward"]["mean"] == pytest.approx(0.2)
    text = (tmp_path / "results_partial.md").read_text()
    assert "PARTIAL" in text and "--seeds 0 1 2" in text
    assert json.loads((tmp_path / "results_partial.json").read_text())["settings"]["partial"] is True


def _row(task, trial, reward, revision="r2", config="c1", gym="persuade"):
    key = {"gym": gym, "task_id": task, "trial": trial, "agent_model": "final", "agent_revision": revision}
    key.update({"simulator": "scripted", "harness_version": "1", "gym_config_hash": config})
    return {"key": key, "status": "scored", "reward": reward}


def test_compare_scores_only_the_trials_of_the_checkpoint_and_settings_it_evaluated():
    """Item 6 (E27): a retrained checkpoint's evaluation in the folder of the old one's, or another seed's, is not
    averaged with the rows already there; a trial retried later counts once, with its latest row."""
    results = {
        "identity": {"agent_model": "final", "agent_revision": "r2", "simulator": "scripted", "harness_version": "1"},
        "config": {"gym_config_hashes": {"persuade": "c1"}},
    }
    rows = [
        _row("t1", 0, 0.0, revision="r1"),  # the old checkpoint
        _row("t1", 0, 1.0, config="c0"),  # another seed (another configuration hash)
        _row("t1", 0, 0.25),
        _row("t1", 0, 0.5),  # the same trial again: the latest row counts
        _row("t2", 0, 1.0),
    ]
    own = study.own_trials(rows, results)
    assert [r["reward"] for r in own] == [0.5, 1.0]
    assert study.per_task_scores(own) == {"t1": {"reward": 0.5, "success": 0.0}, "t2": {"reward": 1.0, "success": 1.0}}


def test_the_newest_run_folder_is_chosen_by_number(tmp_path):
    for n in (0, 9, 10, 2):
        (tmp_path / f"version_{n}").mkdir()
    (tmp_path / "notes").mkdir()
    assert study.newest_version(tmp_path).name == "version_10"
    with pytest.raises(FileNotFoundError, match="no version_N"):
        study.newest_version(tmp_path / "notes")


def test_a_saved_pair_is_not_reused_after_the_base_configs_content_changed(tmp_path):
    import argparse

    config = tmp_path / "base.yaml"
    config.write_text("a: 1\n")
    args = argparse.Namespace(steps=2, tasks=None, trials=1, val_every=None, val_tasks=None, config=str(config))
    saved = tmp_path / "pair.json"
    import json

    saved.write_text(json.dumps({"settings": study.pair_settings(args), "result": {"scores": {}}}))
    assert study.load_pair(saved, study.pair_settings(args)) == {"scores": {}}
    config.write_text("a: 2\n")  # edited in place: same path, other content
    with pytest.raises(SystemExit, match="config_sha256"):
        study.load_pair(saved, study.pair_settings(args))
