"""Pinned per-step values of the tiny SFT, GRPO and CSD recipes over their first steps (fp32, seed 0).

A change that moves any of these numbers (a loss, a mask, an advantage, the sampler, the renderer)
fails here even when every unit test still passes. When a change is *meant* to move them, regenerate
the reference and commit it with the change, saying why:

    python tests/recipes/test_recipe_pins.py --regen

Tolerances absorb float differences across CPUs/BLAS builds (relative 2e-3 + absolute 2e-4), not
behaviour changes: a different sampled token or a flipped sign moves these values by far more.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PINS = Path(__file__).with_name("recipe_pins.json")
REL, ABS = 2e-3, 2e-4

# name -> (config, overrides, run-folder name, pinned scalar tags)
RECIPES: dict[str, tuple[str, list[str], str, list[str]]] = {
    "sft": (
        "configs/tiny/agent_sft.yaml",
        ["--trainer.max_steps=4", "--trainer.log_every_n_steps=1"],
        "tiny_agent_sft",
        ["train/loss"],
    ),
    "grpo": (
        "configs/tiny/agent_grpo.yaml",
        ["--trainer.max_steps=2"],
        "tiny_agent_grpo",
        [
            "rollout/episode_reward_mean",
            "rollout/response_tokens_mean",
            "train/pg_loss",
            "train/grad_norm",
            "train/entropy",
        ],
    ),
    # Three CSD steps (a validation and a checkpoint after step 2 included). Only the first step was pinned while
    # sampling seeds were drawn in the order turns reached the engine, which depended on how the users' replies
    # interleaved; each episode now draws its seed up front (decision A74 in docs/decisions.md).
    "csd": (
        "configs/tiny/agent_csd.yaml",
        ["--trainer.max_steps=3"],
        "tiny_agent_csd",
        [
            "rollout/episode_reward_mean",
            "rollout/response_tokens_mean",
            "train/pg_loss",
            "train/grad_norm",
            "train/csd/loss",
            "train/csd/gate_mean",
        ],
    ),
}


def _scalars(run: Path) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def run_recipe(name: str, out: Path) -> dict[str, list[float]]:
    """Run one recipe into ``out`` and return its pinned tags, per logged step."""
    import os

    from mimesis_pl.cli import main

    config, overrides, folder, tags = RECIPES[name]
    cwd = Path.cwd()
    os.chdir(REPO)
    try:
        main(["fit", "--config", config, f"--trainer.logger.init_args.save_dir={out}", *overrides])
    finally:
        os.chdir(cwd)
    values = _scalars(next((out / folder).iterdir()))
    return {tag: values[tag] for tag in tags}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_matches_its_pinned_values(name, tmp_path):
    pinned = json.loads(PINS.read_text())[name]
    got = run_recipe(name, tmp_path)
    for tag, want in pinned.items():
        assert len(got[tag]) == len(want), (tag, got[tag], want)
        for step, (g, w) in enumerate(zip(got[tag], want)):
            assert math.isclose(g, w, rel_tol=REL, abs_tol=ABS), (
                f"{name}: {tag} at logged step {step} is {g}, pinned {w}. If this change is meant to move it, "
                "regenerate with `python tests/recipes/test_recipe_pins.py --regen` and say why in the commit."
            )


def regenerate() -> None:
    import tempfile

    pins = {}
    for name in sorted(RECIPES):
        with tempfile.TemporaryDirectory() as tmp:
            pins[name] = run_recipe(name, Path(tmp))
        print(name, json.dumps(pins[name]))
    PINS.write_text(json.dumps(pins, indent=1) + "\n")
    print(f"wrote {PINS}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regen"]:
        sys.exit("usage: python tests/recipes/test_recipe_pins.py --regen")
    sys.path.insert(0, str(REPO))
    regenerate()
