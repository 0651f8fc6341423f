"""A fidelity suite and a rollout engine defined outside ``mimesis_pl`` (tests/extension/toy_pkg), run by
``mimesis-pl test`` / ``mimesis-pl fit`` from configs that only name them by import path."""

from __future__ import annotations

import json
from pathlib import Path

from mimesis_pl.cli import main

REPO = Path(__file__).resolve().parents[2]
TOY = Path(__file__).resolve().parent / "toy_pkg"


def test_a_fidelity_suite_from_outside_the_package_reports_from_yaml_alone(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    prompts = tmp_path / "prompts.jsonl"
    rows = [{"id": "a", "prompt": "short one"}, {"id": "b", "prompt": "this prompt has far too many words in it"}]
    prompts.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    config = {
        "trainer": {"accelerator": "cpu", "devices": 1, "enable_progress_bar": False},
        "model": {
            "class_path": "mimesis_pl.modules.simulator_eval.SimulatorEvalModule",
            "init_args": {
                "suite": {"class_path": "brevity_suite.BrevitySuite", "init_args": {"max_words": 5}},
                "out_dir": str(tmp_path / "out"),
            },
        },
        "data": {"class_path": "brevity_suite.BrevityData", "init_args": {"files": [str(prompts)]}},
    }
    path = tmp_path / "brevity.json"
    path.write_text(json.dumps(config))
    assert main(["test", "--config", str(path), f"--trainer.logger.init_args.save_dir={tmp_path}"]) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["brief_share"] == 0.5 and results["items"] == 2


def test_a_rollout_engine_from_outside_the_package_generates_a_training_step(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.chdir(REPO)
    import my_engine

    args = ["fit", "--config", "configs/tiny/agent_grpo.yaml", "--trainer.max_steps=1"]
    args += ["--model.init_args.rollout.engine=my_engine.CountingHFEngineSettings"]
    args += [f"--trainer.default_root_dir={tmp_path}", f"--trainer.logger.init_args.save_dir={tmp_path}"]
    args += ["--model.init_args.validation.val_before_train=false", "--model.init_args.rollout.n_samples=2"]
    assert main(args) == 0
    assert my_engine.BUILT == ["assets/tiny-qwen3"]


def test_the_extension_guide_names_one_file_per_part_and_a_test_that_exists():
    guide = (REPO / "docs" / "extending.md").read_text()
    rows = [line.split("|")[1:-1] for line in guide.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 8
    for part, _, _, files, shown in rows:
        assert files.strip() == "1", part
        named = [w.strip("`(),") for w in shown.split() if w.strip("`(),").startswith("tests/")]
        assert all((REPO / path).exists() for path in named), (part, named)
    assert "| 1 |" in guide and "same file" in guide
