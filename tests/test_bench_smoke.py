"""Every ``bench/`` script runs end to end at toy size in the default suite, so a refactor cannot break one
unseen (``bench_csd.py`` did: the CSD module read a rollout-stage attribute its fixed stage lacked).

Each script runs as a subprocess with its own toy arguments and must exit 0 and print its result lines.
``gpu_check.py`` (``tests/test_gpu_check_dry_run.py``), ``bench_grpo_vs_trl.py``
(``tests/test_bench_grpo_smoke.py``) and ``rounds.py`` (``tests/test_bench_rounds.py``) have their own tests;
``learning_study.py run`` and ``cue_study.py run`` are exercised here (one step, one task); their
statistics (``study_stats.py``) in ``tests/test_learning_study.py`` and ``tests/test_cue_study.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"

TOY = {
    "bench_async.py": (
        ["--config", "configs/tiny/agent_grpo.yaml", "--steps", "3", "--delays", "0.05", "--rounds", "1"]
        + ["--set", "model.init_args.validation=null", "--set", "model.init_args.rollout.n_samples=2"]
        + ["--set", "model.init_args.rollout.max_new_tokens=16"],
        "step_s k0/k1",
    ),
    "async_learning.py": (
        ["--config", "configs/tiny/agent_grpo.yaml", "--steps", "4", "--seeds", "0", "1", "--out", "{tmp}/al"]
        + ["--set", "model.init_args.validation=null", "--set", "model.init_args.rollout.n_samples=2"]
        + ["--set", "model.init_args.rollout.max_new_tokens=16"],
        "gain(k=1) − gain(k=0) over 2 seeds",
    ),
    "bench_csd.py": (["--episodes", "4", "--steps", "1", "--rounds", "1"], "teacher rows per trajectory"),
    "bench_engines.py": (
        ["--requests", "2", "--max-new-tokens", "2", "--max-batch-size", "2", "--rounds", "1"],
        "tok_per_s batched/sequential",
    ),
    "bench_render.py": (["--turns", "2", "--rounds", "1", "--repeats", "1"], "re-prefix/incremental"),
    "bench_rl_math.py": (
        ["--batch", "2", "--response", "64", "--prompt", "16", "--turns", "2", "--noted-turns", "1", "--repeats", "1"],
        "teacher finite: True",
    ),
    "bench_sft.py": (
        ["--vocab", "256", "--hidden", "32", "--layers", "1", "--heads", "2", "--head-dim", "16", "--batch", "1"]
        + ["--seq", "32", "--rounds", "1", "--variants", "hf", "sft"],
        "sft/hf",
    ),
    "bench_sft_data.py": (
        ["--rows", "200", "--eager-max-rows", "200", "--batches", "4", "--window", "64", "--rounds", "1"],
        "streaming@200/eager@200",
    ),
    "bench_serve.py": (
        ["--requests", "2", "--max-new-tokens", "2", "--rounds", "1", "--clients", "1", "2"],
        "served/inproc wall time @2",
    ),
    "cue_start_checks.py": (["assets/agent-cue-coached", "--limit", "4"], "p_noted_given_note"),
    "bench_shim.py": (["--requests", "8", "--rounds", "1", "--episodes", "10", "--max-episodes", "10"], "shim RSS"),
    "simulator_closing_rate.py": (
        ["assets/sim-persuade", "--max-tasks", "2", "--max-turns", "2", "--max-tokens", "96"],
        "closed with a public utterance",
    ),
}


def _run(args: list[str], tmp_path: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_every_bench_script_is_covered():
    own_tests = {"gpu_check.py", "bench_grpo_vs_trl.py", "rounds.py", "learning_study.py", "study_stats.py"}
    own_tests |= {"cue_study.py"}
    assert {p.name for p in BENCH.glob("*.py")} == set(TOY) | own_tests


@pytest.mark.parametrize("script", sorted(TOY))
def test_bench_script_runs_at_toy_size(script, tmp_path):
    args, expected = TOY[script]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if script == "bench_sft_data.py":
        args = [*args, "--cache", str(tmp_path / "cache")]
    done = _run([str(BENCH / script), *args], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert expected in done.stdout, done.stdout[-2000:]


def test_learning_study_run_at_toy_size(tmp_path):
    out = tmp_path / "study"
    args = ["run", "--arms", "sft", "csd", "--seeds", "0", "--steps", "1", "--tasks", "1", "--trials", "1"]
    args += ["--config", "configs/tiny/agent_csd.yaml", "--out", str(out)]  # the tiny job: the same code path
    done = _run([str(BENCH / "learning_study.py"), *args], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["arms"]["csd"]["tasks"] == 1
    assert results["paired"] == {}  # no pair among sft and csd alone
    assert "Paired per-task differences" not in (out / "results.md").read_text()
    assert (out / "results.md").exists()


def test_cue_study_run_at_toy_size(tmp_path):
    """One rollout step (4 updates) of two arms on one held-out task: the fit, the probe, the evaluation, the report."""
    out = tmp_path / "cue"
    args = ["run", "--arms", "grpo", "csd", "--seeds", "0", "--steps", "4", "--tasks", "1", "--trials", "1"]
    done = _run([str(BENCH / "cue_study.py"), *args, "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = (out / "results.md").read_text()
    assert "| csd − grpo | 1 |" in report and "## Gym variant `cue`" in report
    saved = json.loads((out / "results.json").read_text())
    assert sorted(saved) == ["cue/csd/seed0", "cue/grpo/seed0"]
    assert [step for step, _ in saved["cue/csd/seed0"]["probe"]] == [0, 4]


def test_bench_csd_draws_again_with_the_next_seed_when_a_draw_has_no_note(monkeypatch, capsys):
    """An untrained policy calls the user tool only by chance: a draw without notes must not fail the bench."""
    import argparse
    import importlib
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(BENCH))
    bench_csd = importlib.import_module("bench_csd")
    with_note = {3}

    def fake(model_path, n_episodes, seed):
        real = [SimpleNamespace(rows=[1] if seed in with_note else [])]
        step = SimpleNamespace(experience=SimpleNamespace(trained=[0]), teacher=SimpleNamespace(real=real))
        return step, {"made": int(seed in with_note)}, "tok"

    monkeypatch.setattr(bench_csd, "make_experience", fake)
    args = argparse.Namespace(model="m", episodes=4, seed=1, draws=3)
    assert bench_csd.draw_experience(args)[3] == 3
    assert capsys.readouterr().out.count("drawing again") == 2
    with pytest.raises(SystemExit, match="seeds 1..2"):
        bench_csd.draw_experience(argparse.Namespace(model="m", episodes=4, seed=1, draws=2))
