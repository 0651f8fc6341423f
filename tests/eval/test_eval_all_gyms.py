"""The tiny offline config over every gym: Travel runs on generated scenarios and its metrics are reported;
the full evaluation config lists the reference's fifteen sets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from mimesis_pl.cli import main
from mimesis_pl.envs import default_registry
from mimesis_pl.envs.gyms.travel.scenarios import TRAVEL_VARIANTS

REPO = Path(__file__).resolve().parents[2]
REFERENCE_SETS = [
    *TRAVEL_VARIANTS,
    "function",
    "intention",
    "persuasion",
    "tau",
    "telepathy",
    "turtle",
    "bamboogle",
]


def test_eval_agent_config_lists_the_fifteen_reference_sets():
    config = yaml.safe_load((REPO / "configs" / "eval_agent.yaml").read_text())
    files = config["data"]["init_args"]["files"]
    sets = [re.match(r"data/userrl/(\w+?)_multiturn(_onechoice)?/test\.parquet$", f).group(1) for f in files]
    assert sorted(sets) == sorted(REFERENCE_SETS) and len(sets) == 15
    registry = default_registry()  # every configured gym resolves (built in, or through the UserRL adapter)
    for name, options in config["model"]["init_args"]["episode"]["gym_options"].items():
        registry.resolve(name, options)


def test_tiny_offline_config_runs_every_gym_and_reports_travel_metrics(tmp_path):
    out, runs = tmp_path / "all", tmp_path / "runs"
    args = ["test", "--config", "configs/tiny/eval_all_gyms.yaml", "--model.init_args.out_dir", str(out)]
    assert main([*args, "--trainer.logger.init_args.save_dir", str(runs)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["gyms"]) == {
        "function",
        "intention",
        "persuade",
        "search",
        "tau",
        "telepathy",
        "turtle",
        "travel",
    }
    travel = results["gym_metrics"]["travel"]
    assert travel["travel"]["tasks"] + results["gyms"]["travel"]["unscored_trials"] == 2
    for name in ("micro_avg", "micro_max", "avg_number_of_1", "avg_number_of_08", "aspect_score"):
        assert 0.0 <= travel["travel"][name] <= 4.0
    assert any(k.startswith("aspect/") for k in travel["travel"])
    assert set(travel) - {"travel"} <= set(TRAVEL_VARIANTS) and len(travel) >= 2
    markdown = (out / "results.md").read_text()
    assert "### travel: per-gym metrics" in markdown
    assert "Graded by the rule grader" in markdown and "not comparable with UserRL's" in markdown
    assert results["gym_notes"]["travel"].startswith("Graded by the rule grader")
