"""Every teacher mode scores the same log-probs as the packed teacher, in every model state the job can be in.

The matrix: mode (prefix_cache, packed) × {train, eval} × gradient checkpointing {on, off} × LoRA {on, off},
each against the packed teacher of the same weights in eval mode without checkpointing (docs/decisions.md A60). Under
checkpointing in train mode transformers drops the KV cache, so a prefix-cached teacher that trusted it scored
the note and the turn without their prefix.
"""

from __future__ import annotations

import asyncio

import pytest
import torch
from rollout_fixtures import ScriptedEngine, say, telepathy_row

from mimesis_pl.causal_lm import load_causal_lm
from mimesis_pl.chat import ChatRenderer
from mimesis_pl.envs import EnvironmentManager
from mimesis_pl.modules.settings import LoraSettings
from mimesis_pl.rl.teacher import build_teacher_rows, pack_teacher_rows
from mimesis_pl.rl.teacher_forward import (
    prefix_cache_off_checkpointing,
    teacher_logprobs,
    teacher_logprobs_prefix_cached,
)
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.users.scripted import ScriptedUser

NOTES = {0: "Ask what it is made of.", 2: "Commit to the answer now."}
PLACEBO = {0: "Think about colours.", 2: "Be brief."}


@pytest.fixture(scope="module")
def trajectory(tiny_tokenizer):
    texts = [say("action", "Is it a fruit?"), say("action", "Is it green inside?"), say("answer", "Kiwi")]
    loop = MultiTurnRollout(
        ScriptedEngine(tiny_tokenizer, texts),
        tiny_tokenizer,
        EnvironmentManager(users=ScriptedUser()),
        SamplingParams(max_new_tokens=64),
    )
    return asyncio.run(loop.run_episode(telepathy_row(), group_id="g0", gen_uid="g0-0"))


def rows_for(tok, traj, notes):
    renderer = ChatRenderer(tok)

    def render(note):
        return renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": note})

    return build_teacher_rows(traj.input_ids, traj.turn_spans, notes, render, 10_000, prompt_len=0)


_REFERENCE: dict[bool, tuple[torch.Tensor, torch.Tensor]] = {}


def packed_reference(path, tok, traj, lora: bool):
    """The packed teacher of the same weights, eval mode, no checkpointing (computed once per LoRA setting)."""
    if lora not in _REFERENCE:
        model = load(path, lora=lora, checkpointing=False, train=False)
        length = len(traj.input_ids)
        real, plac = rows_for(tok, traj, NOTES), rows_for(tok, traj, PLACEBO)
        _REFERENCE[lora] = (
            teacher_logprobs(model, pack_teacher_rows([real], length, tok.pad_token_id))[0],
            teacher_logprobs(model, pack_teacher_rows([plac], length, tok.pad_token_id), fill=float("nan"))[0],
        )
    return _REFERENCE[lora]


def load(path, *, lora: bool, checkpointing: bool, train: bool):
    torch.manual_seed(0)
    model = load_causal_lm(
        str(path), gradient_checkpointing=checkpointing, lora=LoraSettings(r=4, alpha=8) if lora else None
    )
    if lora:  # LoRA starts as the identity (B = 0): make the adapter matter
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0.0, 0.5)
    return model.train(train)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["ckpt_off", "ckpt_on"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("mode", ["prefix_cache", "packed"])
def test_teacher_mode_equals_packed_teacher(
    tiny_model_path, tiny_tokenizer, trajectory, mode, train, checkpointing, lora
):
    tok, traj = tiny_tokenizer, trajectory
    real, plac = rows_for(tok, traj, NOTES), rows_for(tok, traj, PLACEBO)
    length = len(traj.input_ids)

    want_real, want_plac = packed_reference(tiny_model_path, tok, traj, lora)
    model = load(tiny_model_path, lora=lora, checkpointing=checkpointing, train=train)
    if mode == "prefix_cache":
        got_real, got_plac = teacher_logprobs_prefix_cached(
            model, torch.tensor(traj.input_ids), traj.turn_spans, [real, plac], fill=(0.0, float("nan"))
        )
    else:
        got_real = teacher_logprobs(model, pack_teacher_rows([real], length, tok.pad_token_id))[0]
        got_plac = teacher_logprobs(model, pack_teacher_rows([plac], length, tok.pad_token_id), fill=float("nan"))[0]
    coached = real.teacher_mask
    assert coached.sum() > 0
    assert torch.allclose(got_real, want_real, atol=1e-4), (got_real - want_real).abs().max()
    assert torch.allclose(got_plac, want_plac, atol=1e-4, equal_nan=True)
    assert model.training == train  # the teacher never toggles the model's mode


def test_checkpointing_is_restored_after_the_teacher(tiny_model_path):
    model = load(tiny_model_path, lora=True, checkpointing=True, train=True)
    flags = [m.gradient_checkpointing for m in model.modules() if hasattr(m, "gradient_checkpointing")]
    assert any(flags)
    with prefix_cache_off_checkpointing(model):
        assert not any(m.gradient_checkpointing for m in model.modules() if hasattr(m, "gradient_checkpointing"))
    assert flags == [m.gradient_checkpointing for m in model.modules() if hasattr(m, "gradient_checkpointing")]


def test_prefix_cache_that_does_not_fill_raises(tiny_tokenizer, trajectory):
    """A model that returns no cache cannot honour the prefix-cache contract: it raises, never scores without it."""

    class NoCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, **kwargs):
            from types import SimpleNamespace

            return SimpleNamespace(logits=torch.zeros(*input_ids.shape, 8), past_key_values=None)

    real = rows_for(tiny_tokenizer, trajectory, {2: "Commit."})
    with pytest.raises(RuntimeError, match="prefix cache"):
        teacher_logprobs_prefix_cached(NoCache(), torch.tensor(trajectory.input_ids), trajectory.turn_spans, [real])
