"""The whole MIMESIS flow on one machine, at toy size, through the CLI and the shipped flow configs.

role-swap SFT → ThoughtTrace SFT → simulator RL (each stage's config names the previous export) → the four fidelity
suites on the simulator just trained → agent GRPO + CSD against it (served in the job behind the shim, the coach
reading its real reasoning) → ``mimesis-pl test`` of that agent against it. To keep it to minutes, the simulator
stages start from the shipped simulator (``assets/sim-persuade``, made by the same configs at full length) and run
two steps each; the agent plays two tasks. No private reasoning may reach any agent-visible message.
"""

from __future__ import annotations

import json
from pathlib import Path

from mimesis_pl.cli import main
from mimesis_pl.serve import ServeSettings, start_in_background

from .conftest import REPO

FLOW = REPO / "configs" / "flow"
TINY = REPO / "configs" / "tiny"
SIMULATOR = REPO / "assets" / "sim-persuade"


def fit(*args: str) -> None:
    assert main(["fit", *args]) == 0


def logger(tmp_path: Path, version: str) -> list[str]:
    return [
        f"--trainer.logger.init_args.save_dir={tmp_path}",
        "--trainer.logger.init_args.name=flow",
        f"--trainer.logger.init_args.version={version}",
    ]


def export(tmp_path: Path, version: str) -> Path:
    folder = tmp_path / "flow" / version / "hf" / "final"
    assert (folder / "config.json").is_file(), f"stage {version} exported nothing"
    return folder


def train_simulator(tmp_path: Path) -> Path:
    rows = tmp_path / "simulator_rows.parquet"
    persuade = str(REPO / "assets" / "data" / "persuade" / "train" / "PersuadeGym.parquet")
    assert main(["data", "record-simulator", "--src", persuade, "--out", str(rows), "--max-turns", "2"]) == 0
    fit(
        "--config",
        str(FLOW / "simulator_roleswap_sft.yaml"),
        f"--model.init_args.model_path={SIMULATOR}",
        f"--data.init_args.files=[{rows}]",
        "--trainer.max_steps=2",
        *logger(tmp_path, "simulator_roleswap_sft"),
    )
    fit(
        "--config",
        str(FLOW / "simulator_thoughttrace_sft.yaml"),
        f"--model.init_args.model_path={export(tmp_path, 'simulator_roleswap_sft')}",
        "--trainer.max_steps=2",
        *logger(tmp_path, "simulator_thoughttrace_sft"),
    )
    fit(
        "--config",
        str(FLOW / "simulator_rl.yaml"),
        f"--model.init_args.policy.model_path={export(tmp_path, 'simulator_thoughttrace_sft')}",
        "--trainer.max_steps=1",
        "--data.init_args.batch_size=4",
        *logger(tmp_path, "simulator_rl"),
    )
    return export(tmp_path, "simulator_rl")


def run_suites(simulator: Path, tmp_path: Path) -> None:
    out = tmp_path / "suites"
    soul = [
        "--config",
        str(TINY / "eval_soul.yaml"),
        f"--model.init_args.suite.init_args.simulator.model_path={simulator}",
        "--model.init_args.suite.init_args.seeds=[0]",
        f"--model.init_args.out_dir={out / 'soul'}",
    ]
    assert main(["test", *soul]) == 0
    with start_in_background(ServeSettings(model_dir=str(simulator), port=0, device="cpu")) as server:
        fields = f"url: {server.url}, model: {server.model_name}, max_tokens: 64, temperature: 0.7"
        served = f"{{class_path: mimesis_pl.llm.ServedChatSettings, init_args: {{{fields}}}}}"
        for suite in ("realusersim", "tau_usi", "turing"):
            args = [
                "--config",
                str(TINY / f"eval_{suite}.yaml"),
                f"--model.init_args.suite.init_args.simulator={served}",
                f"--model.init_args.out_dir={out / suite}",
            ]
            assert main(["test", *args]) == 0, suite
    for suite in ("soul", "realusersim", "tau_usi", "turing"):
        assert (out / suite / "results.md").is_file(), f"{suite} wrote no table"


def environment_text(episodes: Path) -> str:
    """Everything the environment (the simulator, through the gym) showed the agent in the evaluation's episodes:
    the tool observations and user turns (the agent's own turns hold its own reasoning; the simulator's private
    side is stored apart, under ``simulator``)."""
    text = []
    for line in episodes.read_text().splitlines():
        messages = json.loads(line)["episode"]["messages"]
        text += [str(m.get("content", "")) for m in messages if m.get("role") in ("tool", "user")]
    return "\n".join(text)


def test_the_whole_flow_runs_on_cpu_and_nothing_private_reaches_the_agent(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    simulator = train_simulator(tmp_path)
    run_suites(simulator, tmp_path)

    users = f"--model.init_args.rollout.users.model_dir={simulator}"
    fit(
        "--config",
        str(FLOW / "agent_csd.yaml"),
        users,
        "--trainer.max_steps=1",
        "--data.init_args.batch_size=2",
        "--model.init_args.rollout.n_samples=2",
        "--model.init_args.ppo.mini_batch_size=4",
        *logger(tmp_path, "agent_csd"),
    )
    run = tmp_path / "flow" / "agent_csd"
    notes = [json.loads(line) for line in (run / "coach_notes.jsonl").read_text().splitlines()]
    assert notes and any(n["evidenced"] for n in notes), "the coach never read the simulator's reasoning"

    out = tmp_path / "eval_agent"
    test_args = [
        "--config",
        str(FLOW / "eval_agent.yaml"),
        f"--model.init_args.agent.init_args.model_path={export(tmp_path, 'agent_csd')}",
        f"--model.init_args.users.init_args.model_dir={simulator}",
        "--model.init_args.n_trials=1",
        "--model.init_args.ks=[1]",
        f"--model.init_args.out_dir={out}",
        f"--data.init_args.files=[{REPO / 'assets' / 'data' / 'persuade' / 'test' / 'PersuadeGym.parquet'}]",
        "--data.init_args.tasks_per_gym=2",
        *logger(tmp_path, "eval_agent"),
    ]
    assert main(["test", *test_args]) == 0
    seen = environment_text(next(out.rglob("episodes.jsonl")))
    assert "Stance:" in seen, "the simulator's public replies never reached the agent"
    # The simulator's thoughts (learnt from the scripted user's) and any think tag stay out of what the agent saw.
    for private in ("<think>", "</think>", "Points answered so far", "My position:"):
        assert private not in seen, private
