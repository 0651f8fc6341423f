"""The stages read from their module only what ``stages.policy_module.PolicyModule`` declares (issue #38: a declared
interface between an RL step's stages and the module)."""

from __future__ import annotations

import ast
from pathlib import Path

from mimesis_pl.stages.policy_module import PolicyModule

STAGES = Path(__file__).resolve().parents[2] / "mimesis_pl" / "stages"


def declared() -> set[str]:
    names = set(getattr(PolicyModule, "__annotations__", {}))
    return names | {n for n in vars(PolicyModule) if not n.startswith("_")}


def read_from_module(source: str) -> set[str]:
    """The attributes read as ``module.<name>`` in ``source``."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "module"
    }


def test_the_reader_sees_module_attributes():
    assert read_from_module("def f(module):\n    return module.trainer.world_size + module.device\n") == {
        "trainer",
        "device",
    }


def test_every_stage_reads_only_the_declared_interface():
    for path in sorted(STAGES.glob("*.py")):
        extra = read_from_module(path.read_text()) - declared()
        assert not extra, f"{path.name} reads module.{sorted(extra)}, not declared on PolicyModule"
    assert {"trainer", "tokenizer", "model", "device", "global_step", "weights_version"} <= declared()
