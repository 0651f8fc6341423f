"""The study's CSD diagnostics: teacher gap and gate split by turns that restate the opening (lapses) vs not."""

from __future__ import annotations

import math

import torch
from csd_fixtures import turn

from mimesis_pl.csd.evidence import lapse_turns
from mimesis_pl.rl.losses import gap_gate_by_group

NAN = float("nan")


def test_lapse_turns_are_turns_that_restate_the_opening():
    opening = turn("answer", "I disagree: it does more harm than good.")
    messages = [
        {"role": "system", "content": "Argue."},
        {"role": "user", "content": "Claim."},
        {"role": "assistant", "content": opening},
        {"role": "tool", "content": "Not persuaded; you have not answered my point about cost."},
        {"role": "assistant", "content": turn("answer", "On cost: it pays for itself.", thought="the open point")},
        {"role": "tool", "content": "Fair point about cost."},
        {"role": "assistant", "content": turn("answer", "I disagree:  it does more harm than good.", thought="x")},
    ]
    assert lapse_turns(messages) == {2}  # same content (whitespace aside), whatever the thought
    assert lapse_turns(messages[:2]) == set()


def test_gap_and_gate_by_group_hand_worked():
    s = torch.tensor([[-1.0, -1.0, -2.0, -1.0]])
    t = torch.tensor([[-0.5, -1.0, -2.0, NAN]])
    p = torch.tensor([[-1.5, NAN, NAN, NAN]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    lapse = torch.tensor([[True, False, False, True]])
    got = gap_gate_by_group(s, t, mask, {"lapse": lapse, "steady": ~lapse}, beta=2.0, placebo_logprobs=p)
    # token 0 (lapse): debiased gap t − p = 1.0, gate σ(2) ; tokens 1, 2 (steady): raw gaps 0, 0, gate ½;
    # token 3 is not coached
    assert got["tokens/lapse"] == 1 and got["tokens/steady"] == 2
    assert math.isclose(got["teacher_gap_mean/lapse"], 1.0, abs_tol=1e-6)
    assert math.isclose(got["gate_mean/lapse"], 1 / (1 + math.exp(-2.0)), abs_tol=1e-6)
    assert math.isclose(got["teacher_gap_mean/steady"], 0.0, abs_tol=1e-6)
    assert math.isclose(got["gate_mean/steady"], 0.5, abs_tol=1e-6)
    empty = gap_gate_by_group(s, t, mask, {"none": torch.zeros_like(lapse)})
    assert empty["tokens/none"] == 0 and math.isnan(empty["gate_mean/none"])
