"""The reference's CSD behaviour by default, ours as named options (docs/decisions.md A61–A64)."""

from __future__ import annotations

import math

import pytest
import torch

from mimesis_pl.csd.prompts import HINDSIGHT_HEADER, HINDSIGHT_PREAMBLE, frame_note
from mimesis_pl.modules.ppo_module import extra_term_weight
from mimesis_pl.modules.settings import CSDSettings
from mimesis_pl.rl.losses import csd_loss
from mimesis_pl.rl.placebo import and_mask_placebo
from mimesis_pl.rollout.coaching import CoachingSettings, CoachStage, OpenAICoachSettings

NAN = float("nan")

# -- A61: the note is framed as hindsight ------------------------------------------------------------


def test_notes_are_framed_as_hindsight_by_default(tiny_tokenizer):
    stage = CoachStage(CoachingSettings())
    stage.setup(tiny_tokenizer, user_shim_url=None)
    try:
        text = tiny_tokenizer.decode(stage._note_ids("Ask about the budget."))
    finally:
        stage.teardown()
    assert text == f"<|im_start|>user\n{HINDSIGHT_HEADER}\n{HINDSIGHT_PREAMBLE}\nAsk about the budget.<|im_end|>\n"


def test_bare_framing_is_the_note_alone(tiny_tokenizer):
    stage = CoachStage(CoachingSettings(note_framing="bare"))
    stage.setup(tiny_tokenizer, user_shim_url=None)
    try:
        assert tiny_tokenizer.decode(stage._note_ids("Ask.")) == "<|im_start|>user\nAsk.<|im_end|>\n"
    finally:
        stage.teardown()
    assert frame_note("x", "bare") == "x"
    with pytest.raises(ValueError, match="note_framing"):
        CoachingSettings(note_framing="loud")


# -- A62: the AND mask ---------------------------------------------------------------------------------


def test_and_mask_drops_placebo_less_tokens_only_in_trajectories_with_placebos():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    placebo = torch.tensor([[-1.0, NAN, -2.0, NAN], [NAN, NAN, NAN, NAN], [NAN, -1.0, NAN, NAN]])
    got = and_mask_placebo(mask, placebo)
    # row 0 has placebos: its token 1 (no placebo) is dropped; row 1 has none: raw tokens kept
    assert got.tolist() == [[True, False, True, False], [True, True, False, False], [False, False, False, False]]


def test_and_mask_changes_the_loss_as_hand_worked():
    s = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    t = torch.tensor([[-0.5, -3.0]])
    p = torch.tensor([[-1.5, NAN]])
    mask = torch.tensor([[True, True]])
    kept = and_mask_placebo(mask, p)
    loss, m = csd_loss(s, t, kept.float(), beta=0.0, placebo_logprobs=p)
    # only token 0 remains, with debiased gap t − p = 1.0; β = 0 → gate ½; L = ½ · 1.0
    assert math.isclose(float(loss.detach()), 0.5, abs_tol=1e-6)
    assert math.isclose(float(m["teacher_gap_mean"]), 1.0, abs_tol=1e-6)


def test_placebo_rule_defaults_to_the_reference():
    assert CSDSettings().placebo_missing == "drop"
    assert CSDSettings(placebo_missing="raw").placebo_missing == "raw"
    with pytest.raises(ValueError, match="placebo_missing"):
        CSDSettings(placebo_missing="mix")


# -- A63: the CSD term is weighted as the reference's loss aggregation -------------------------------------


def test_extra_term_weight_hand_worked():
    # a rank with 4 micro-batches: each micro-batch's CSD mean counts ¼, however many PG tokens it has
    assert extra_term_weight("micro_batch", pg_weight=0.9, accumulation=4) == 0.25
    assert extra_term_weight("pg_token_share", pg_weight=0.9, accumulation=4) == 0.9
    with pytest.raises(ValueError, match="accumulation"):
        extra_term_weight("micro_batch", pg_weight=1.0, accumulation=0)


def test_weighting_defaults_to_the_reference():
    assert CSDSettings().weighting == "micro_batch"
    with pytest.raises(ValueError, match="weighting"):
        CSDSettings(weighting="tokens")


# -- A64: the guard compares the coach's upstream with the user shim -------------------------------------


@pytest.mark.parametrize("shim", [True, False])
def test_coach_upstream_at_the_user_shim_is_refused_in_every_mode(shim):
    settings = OpenAICoachSettings(upstream_url="http://localhost:8710/v1", shim=shim)
    with pytest.raises(ValueError, match="same server"):
        settings.build(600, user_shim_url="http://127.0.0.1:8710")
