"""Recombined PersuadeGym tasks: new arguments from other rows' sentences, claims and schema kept."""

from __future__ import annotations

import pytest

from mimesis_pl.data.persuade_mix import recombined_tasks
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import sentences


def _row(i: int, argument: str) -> dict:
    claim = f"Claim number {i} holds"
    return {
        "data_source": "interact_persuade",
        "prompt": [{"role": "user", "content": f"Claim that you oppose but the environment holds: {claim}"}],
        "reward_model": {"argument": argument, "claim": claim, "env_name": "PersuadeGym"},
        "extra_info": {
            "index": i,
            "tools_kwargs": {"interact_with_env": {"create_kwargs": {"argument": argument, "env_name": "PersuadeGym"}}},
        },
    }


ROWS = [
    _row(0, "Alpha one is here. Alpha two is there. Alpha three goes on."),
    _row(1, "Bravo one is here. Bravo two is there."),
    _row(2, "Charlie one is here. Charlie two is there. Charlie three goes on. Charlie four ends."),
]


def test_new_arguments_use_only_other_rows_sentences_and_keep_the_claim():
    new = recombined_tasks(ROWS, n=20, seed=3, min_sentences=2, max_sentences=3)
    assert [r["extra_info"]["index"] for r in new] == list(range(3, 23))
    for row in new:
        claim = row["reward_model"]["claim"]
        origin = next(r for r in ROWS if r["reward_model"]["claim"] == claim)
        argument = row["reward_model"]["argument"]
        assert argument == row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"]["argument"]
        parts = sentences(argument)
        assert 2 <= len(parts) <= 3
        own = set(sentences(origin["reward_model"]["argument"]))
        others = {s for r in ROWS if r is not origin for s in sentences(r["reward_model"]["argument"])}
        assert all(p in others and p not in own for p in parts)
        assert row["prompt"] == origin["prompt"]
        assert GymTask.from_row(row).hidden["argument"] == argument
    assert ROWS[0]["reward_model"]["argument"].startswith("Alpha one")  # sources untouched


def test_the_same_seed_gives_the_same_rows_and_another_seed_other_rows():
    assert recombined_tasks(ROWS, n=5, seed=1) == recombined_tasks(ROWS, n=5, seed=1)
    assert recombined_tasks(ROWS, n=5, seed=1) != recombined_tasks(ROWS, n=5, seed=2)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at least 2 rows"):
        recombined_tasks(ROWS[:1], n=1)
    broken = [ROWS[0], {"reward_model": {"claim": "x"}, "extra_info": {}}]
    with pytest.raises(ValueError, match="row 1: no 'argument'"):
        recombined_tasks(broken, n=1)
