"""tau-USI suite: the tiny config through the CLI (scripted runtime over HTTP), kill and resume, scoring."""

from __future__ import annotations

import asyncio
import json

import pytest
from simulator_helpers import (
    Killed,
    assert_no_scored_item_redone,
    cache_lines,
    kill_after,
    run_suite,
    scalars,
)

from mimesis_pl.cli import MimesisCLI, main
from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.simulator.base import SuiteContext
from mimesis_pl.eval.simulator.rows import DataFormatError
from mimesis_pl.eval.simulator.tau_usi import HttpRuntimeSettings, ScriptedHttpRuntimeSettings, TauUSISuite
from mimesis_pl.eval.simulator.tau_usi import suite as tau_usi
from mimesis_pl.eval.simulator.tau_usi.data import HumanEntry, load_human_batches, load_tau_tasks
from mimesis_pl.eval.simulator.tau_usi.features import conversation_features
from mimesis_pl.eval.simulator.tau_usi.scoring import RunTask, score_batch
from mimesis_pl.eval.trials import TrialCache
from mimesis_pl.moved import RENAMED_KINDS

CONFIG = "configs/tiny/eval_tau_usi.yaml"
ROLLOUTS = 6 * 2  # 6 tasks x 2 seeds


def test_tiny_tau_usi_runs_is_killed_and_resumes_without_redoing_items(tmp_path, monkeypatch):
    out, runs = tmp_path / "out", tmp_path / "runs"
    monkeypatch.setattr(tau_usi, "scripted_tau_agent", kill_after(40, tau_usi.scripted_tau_agent))
    with pytest.raises(Killed):
        run_suite(CONFIG, out, runs)
    first = cache_lines(out / "tau_usi_items.jsonl")
    assert 0 < len(first) < ROLLOUTS

    monkeypatch.undo()
    run_suite(CONFIG, out, runs)
    lines = cache_lines(out / "tau_usi_items.jsonl")
    assert_no_scored_item_redone(first, lines[len(first) :])
    resumed = scalars(runs / "tiny_eval_tau_usi" / "version_1")
    assert resumed["items/reused"] == len(first) and resumed["items/run"] == ROLLOUTS - len(first)
    results = json.loads((out / "results.json").read_text())
    assert results["rollouts_scored"] == ROLLOUTS and results["rollouts_unscored"] == 0
    # Batch 3 drops retail_2 (keep: false): 5 tasks; batches 1 and 2 hold all 6.
    assert [results["batches"][b]["tasks"] for b in ("1", "2", "3")] == [6, 6, 5]
    for batch in results["batches"].values():
        d = [batch[k] for k in ("D1", "D2", "D3", "D4")]
        assert batch["usi5"] == pytest.approx((sum(d) + 100 * (1 - batch["ece"])) / 5)
        assert batch["usi6"] == pytest.approx((sum(d) + batch["eval"] + 100 * (1 - batch["ece"])) / 6)
    assert resumed["tau_usi/usi5"] == pytest.approx(results["summary"]["usi5"]["mean"])
    # Every rollout went through the scripted runtime over HTTP and reached its goal.
    assert results["summary"]["sim_success"]["mean"] == 1.0
    assert "| mean ± std |" in (out / "results.md").read_text()
    assert (out / "charts" / "tau_usi.png").read_bytes().startswith(b"\x89PNG")


def test_score_batch_hand_worked():
    chat = [{"role": "user", "content": "cancel #W1 please"}, {"role": "user", "content": "yes"}]
    features = conversation_features(chat)
    human = {"a": HumanEntry("a", tuple(chat), 1.0), "b": HumanEntry("b", tuple(chat), 1.0)}
    run = {"a": RunTask(features, 1.0, {"human_like": "Yes"}), "b": RunTask(features, 0.0, {"human_like": "Yes"})}
    # Same features: every Dice similarity is 1 -> D1..D4 = 100. Difficulty puts a and b in different bins;
    # bin of a: |1 - 1| = 0, bin of b: |0 - 1| = 1 -> ECE = 1/2 * 0 + 1/2 * 1 = 0.5; USI5 = (400 + 50) / 5 = 90.
    out = score_batch(human, {0: run}, {"a": 0.1, "b": 0.9}, eval_mean=50.0)
    assert [out[d] for d in ("D1", "D2", "D3", "D4")] == [100.0] * 4
    assert out["ece"] == pytest.approx(0.5) and out["usi5"] == pytest.approx(90.0)
    # With the model's Eval 50: USI6 = (400 + 50 + 50) / 6.
    assert out["eval"] == pytest.approx(50.0) and out["usi6"] == pytest.approx(500 / 6)
    assert out["sim_success"] == 0.5 and out["human_success"] == 1.0


def test_tau_loaders_name_file_and_field(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"env_name": "retail", "task_index": "0", "instruction": "x"}]))
    with pytest.raises(DataFormatError, match=r"tasks.json:item 0: field 'task_index' must be int"):
        load_tau_tasks([str(path)])
    human = tmp_path / "humans.json"
    human.write_text(json.dumps({"retail_0_ann2": {"conversation": [{"role": "user"}], "reward": 1}}))
    with pytest.raises(DataFormatError, match=r"entry 'retail_0_ann2': conversation\[0\] needs string"):
        load_human_batches(human)
    human.write_text(
        json.dumps(
            {
                "retail_0_ann2": {"conversation": [], "reward": 1, "keep": False},
                "retail_0": {"conversation": [{"role": "user", "content": "hi"}], "reward": 0},
            }
        )
    )
    assert list(load_human_batches(human)) == [1]


def test_unreachable_runtime_leaves_rollouts_unscored_and_counted(tmp_path):
    suite = TauUSISuite(
        human_file="assets/data/eval/tau_usi/tau_bench_tasks_unified.json",
        difficulty_file="assets/data/eval/tau_usi/tau_usi_difficulty.json",
        runtime=HttpRuntimeSettings(url="http://127.0.0.1:9", timeout_s=2.0),
    )
    suite.start()
    ctx = SuiteContext(TrialCache(tmp_path / "items.jsonl"), RetryPolicy(max_attempts=1, backoff_s=0), 2, tmp_path)
    tasks = load_tau_tasks(["assets/data/eval/tau_usi/tasks.json"])[:1]

    async def run():
        try:
            await suite.run_batch(tasks, ctx)
        finally:
            await suite.aclose()

    asyncio.run(run())
    (record,) = cache_lines(tmp_path / "items.jsonl")
    assert record["status"] == "unscored" and record["failure"] == "environment"
    with pytest.raises(RuntimeError, match=r"no rollout could be scored \(\{'environment': 1\}\)"):
        suite.report(ctx)


RUNTIME = "--model.init_args.suite.init_args.runtime"


@pytest.mark.parametrize("class_path", ["HttpRuntimeSettings", "mimesis_pl.eval.simulator.tau_usi.HttpRuntimeSettings"])
def test_the_runtime_is_chosen_by_class_path_bare_or_full(class_path):
    cli = MimesisCLI(args=["--config", CONFIG], run=False)
    assert cli.model.suite.runtime_settings == ScriptedHttpRuntimeSettings()  # what the tiny config names
    value = f"{{class_path: {class_path}, init_args: {{url: http://127.0.0.1:8005, timeout_s: 120.0}}}}"
    cli = MimesisCLI(args=["--config", CONFIG, f"{RUNTIME}={value}"], run=False)
    runtime = cli.model.suite.runtime_settings
    assert runtime == HttpRuntimeSettings(url="http://127.0.0.1:8005", timeout_s=120.0)
    # What results.json and the rollout cache key name for each runtime, as before issue #38
    assert (runtime.label, runtime.identity()) == ("http", "http://127.0.0.1:8005")
    scripted = ScriptedHttpRuntimeSettings()
    assert (scripted.label, scripted.identity()) == ("scripted_http", "scripted")
    assert TauUSISuite(human_file="h", difficulty_file="d").runtime_settings == scripted  # the default
    with pytest.raises(ValueError, match="runtime.url is required"):
        HttpRuntimeSettings()


@pytest.mark.parametrize("kind", ["scripted_http", "http"])
def test_the_old_runtime_kind_fails_naming_its_class_path(kind, capsys):
    new = RENAMED_KINDS["tau-USI runtime"][kind]
    assert new.endswith(("ScriptedHttpRuntimeSettings", ".HttpRuntimeSettings"))
    old = f"{RUNTIME}={{kind: {kind}, url: http://127.0.0.1:8005}}"
    assert main(["test", "--config", CONFIG, old, "--print_config"]) == 2
    err = capsys.readouterr().err
    assert f"runtime: 'kind: {kind}' was replaced by a class_path" in err and f"class_path: {new}" in err


def test_the_new_runtime_spelling_prints_in_the_config(capsys):
    with pytest.raises(SystemExit) as done:
        main(["test", "--config", CONFIG, "--print_config"])
    assert done.value.code in (0, None)
    printed = capsys.readouterr().out
    assert "runtime:\n          class_path: mimesis_pl.eval.simulator.tau_usi.ScriptedHttpRuntimeSettings" in printed
