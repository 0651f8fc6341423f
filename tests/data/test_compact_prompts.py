"""Compact system prompts for CPU-sized agents: only the system message changes."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from mimesis_pl.data.gym_prep import compact_prompt_row
from mimesis_pl.envs.registry import default_registry

COMPACT_SYSTEM_PROMPTS = default_registry().compact_prompts()
from mimesis_pl.envs import GymTask

from ..conftest import REPO


def test_compact_prompt_replaces_only_the_system_message():
    row = pq.read_table(REPO / "assets/data/gyms/train/PersuadeGym.parquet").to_pylist()[0]
    new = compact_prompt_row(row, "PersuadeGym")
    assert new["prompt"][0] == {"role": "system", "content": COMPACT_SYSTEM_PROMPTS["PersuadeGym"]}
    assert new["prompt"][1:] == row["prompt"][1:] and row["prompt"][0]["content"] != new["prompt"][0]["content"]
    assert {k: v for k, v in new.items() if k != "prompt"} == {k: v for k, v in row.items() if k != "prompt"}
    assert GymTask.from_row(new).hidden == GymTask.from_row(row).hidden
    with pytest.raises(ValueError, match="no compact system prompt"):
        compact_prompt_row(row, "TurtleGym")


def test_the_shipped_persuade_sets_are_compact_and_disjoint():
    train = pq.read_table(REPO / "assets/data/persuade/train/PersuadeGym.parquet").to_pylist()
    test = pq.read_table(REPO / "assets/data/persuade/test/PersuadeGym.parquet").to_pylist()
    assert (len(train), len(test)) == (378, 42)
    keys = [{GymTask.from_row(r).key for r in rows} for rows in (train, test)]
    assert not keys[0] & keys[1]
    assert all(r["prompt"][0]["content"] == COMPACT_SYSTEM_PROMPTS["PersuadeGym"] for r in train + test)
