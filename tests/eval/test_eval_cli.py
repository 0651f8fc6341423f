"""`mimesis-pl test` on the tiny evaluation configs: report files, TensorBoard scalars, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mimesis_pl.cli import main

GYMS = {"function", "intention", "persuade", "telepathy", "turtle"}


def tensorboard_scalars(run_dir: Path) -> dict[str, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = run_dir.glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    return {tag: accumulator.Scalars(tag)[-1].value for tag in accumulator.Tags()["scalars"]}


def run_cli(config: str, out: Path, runs: Path, *overrides: str) -> None:
    # configs name assets/ relatively; the eval conftest runs every test from the repository root
    assert (
        main(
            [
                "test",
                "--config",
                config,
                "--model.init_args.out_dir",
                str(out),
                "--trainer.logger.init_args.save_dir",
                str(runs),
                *overrides,
            ]
        )
        == 0
    )


# The shipped config as is, but shorter turns: keeps the default test run fast (the full config's
# timing is reported with the change that added it).
SHORT_TURNS = ("--model.init_args.agent.max_new_tokens", "24")


def test_tiny_agent_eval_writes_reports_and_scalars_then_resumes(tmp_path):
    out, runs = tmp_path / "agent", tmp_path / "runs"
    run_cli("configs/tiny/eval_agent.yaml", out, runs, *SHORT_TURNS)

    results = json.loads((out / "results.json").read_text())
    assert results["mode"] == "episode" and set(results["gyms"]) == GYMS
    assert results["identity"]["agent_model"] == "tiny-agent" and results["config"]["max_turns"] == 4
    for summary in results["gyms"].values():
        assert (summary["tasks"], summary["n_trials"], summary["missing_trials"]) == (2, 2, 0)
        assert summary["scored_trials"] + summary["unscored_trials"] == 4
    assert "| gym | tasks | n | avg@n | pass@1 | pass@2 | pass^1 | pass^2 |" in (out / "results.md").read_text()
    charts = sorted(p.name for p in (out / "charts").glob("*.png"))
    assert charts == sorted(f"{g}.png" for g in GYMS)
    assert all((out / "charts" / c).read_bytes().startswith(b"\x89PNG") for c in charts)
    assert len((out / "trials.jsonl").read_text().splitlines()) == 20
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 20

    scalars = tensorboard_scalars(runs / "tiny_eval_agent" / "version_0")
    assert scalars["eval/trials_run"] == 20 and scalars["eval/trials_reused"] == 0
    for gym, summary in results["gyms"].items():  # the torchmetrics agree with the JSON report
        for k in ("1", "2"):
            for name, key in ((f"pass@{k}", "pass_at_k"), (f"pass^{k}", "pass_hat_k")):
                if summary[key][k] is not None:
                    assert math.isclose(scalars[f"eval/{gym}/{name}"], summary[key][k], abs_tol=1e-6)
        if summary["avg_at_n"] is not None:
            assert math.isclose(scalars[f"eval/{gym}/avg@n"], summary["avg_at_n"], abs_tol=1e-6)

    run_cli("configs/tiny/eval_agent.yaml", out, runs, *SHORT_TURNS)  # resumes from the cache: nothing runs
    again = tensorboard_scalars(runs / "tiny_eval_agent" / "version_1")
    assert again["eval/trials_run"] == 0 and again["eval/trials_reused"] == 20
    assert len((out / "trials.jsonl").read_text().splitlines()) == 20
    assert json.loads((out / "results.json").read_text())["gyms"] == results["gyms"]


def test_tiny_replay_eval_writes_reports_and_scalars(tmp_path):
    out, runs = tmp_path / "replay", tmp_path / "runs"
    run_cli("configs/tiny/eval_replay.yaml", out, runs)

    summary = json.loads((out / "replay_results.json").read_text())
    records = (out / "replay_records.jsonl").read_text().splitlines()
    requests = [json.loads(line) for line in records if json.loads(line)["record"] == "request"]
    assert summary["mode"] == "replay" and summary["requests"] == len(requests) > 0
    assert all(r["agent_calls"] == 1 for r in requests)  # one greedy decision per request
    assert summary["skipped_steps"] > 0 and summary["unscored_by_kind"] == {"unjudged": 1}
    assert "Replay (teacher forcing)" in (out / "replay_results.md").read_text()
    assert (out / "charts" / "replay.png").read_bytes().startswith(b"\x89PNG")
    assert not (out / "results.json").exists()  # replay and episode results never share a file

    scalars = tensorboard_scalars(runs / "tiny_eval_replay" / "version_0")
    assert scalars["replay/requests"] == summary["requests"]
    assert scalars["replay/pass_rate"] == pytest.approx(summary["pass_rate"])
    assert scalars["replay/skipped_steps"] == summary["skipped_steps"]
    assert not any(tag.startswith("eval/") for tag in scalars)
