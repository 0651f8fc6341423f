"""Experience building (rewards, masking, advantages) and the RL job through ``mimesis-pl fit``."""

from __future__ import annotations

import asyncio
import json
import math

import torch
from rollout_fixtures import ScriptedEngine, say, telepathy_row

from mimesis_pl.envs import EnvironmentManager, GymRegistry
from mimesis_pl.envs.gyms.telepathy import TelepathyGym
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.experience import build_experience
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.rollout.settings import AdvantageSettings
from mimesis_pl.users.scripted import ScriptedUser

from ..conftest import REPO


def episode(tok, texts, max_turns=16, gen_uid="g-0", registry=None):
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=max_turns, registry=registry)
    loop = MultiTurnRollout(ScriptedEngine(tok, texts), tok, manager, SamplingParams(max_new_tokens=64))
    return asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid=gen_uid))


def test_multiturn_advantages_of_whole_episodes_are_exact(tiny_tokenizer):
    tok = tiny_tokenizer
    a = episode(tok, [say("action", "Is it a fruit?"), say("answer", "Banana"), say("answer", "Kiwi")])
    b = episode(tok, [say("action", "Is it red?")], max_turns=2, gen_uid="g-1")
    assert (a.turn_rewards, a.status) == ([0.0, 0.0, 1.0], "finished")
    assert (b.turn_rewards, b.status) == ([0.0, 0.0], "max_turns")
    exp = build_experience([a, b], AdvantageSettings(estimator="trajectory"), pad_id=tok.pad_token_id)

    # scores (R2G, γ = 0.8): a = 0.8² · 1 = 0.64, b = 0; group of two → μ = 0.32, σ (unbiased) = √(2 · 0.32²)
    assert math.isclose(a.reward, 0.64, rel_tol=1e-6) and b.reward == 0.0
    sigma = math.sqrt(2 * 0.32**2)
    z_a, z_b = 0.32 / (sigma + 1e-6), -0.32 / (sigma + 1e-6)
    # a's turn credits (R2G): c0 = 0.8² · 1 = 0.64, c1 = 0.8, c2 = 1; rescaled so their token mean is z_a
    credits = [0.64, 0.8, 1.0]
    lengths = [s.end - s.start for s in a.turn_spans]
    token_mean = sum(c * n for c, n in zip(credits, lengths)) / sum(lengths)
    adv = exp.tensors["advantages"]
    for t, span in enumerate(a.turn_spans):
        want = z_a * credits[t] / token_mean
        assert torch.allclose(adv[0, span.start : span.end], torch.full((span.end - span.start,), want), atol=1e-5)
    # b has only zero credits: its z-score is spread evenly over its generated tokens (pushed down)
    for span in b.turn_spans:
        assert torch.allclose(adv[1, span.start : span.end], torch.full((span.end - span.start,), z_b), atol=1e-5)
    # nothing outside generated tokens
    assert adv[exp.tensors["response_mask"] == 0].abs().max() == 0
    assert exp.metrics["rollout/success_rate"] == 0.5
    assert exp.metrics["rollout/status/finished"] == 1 and exp.metrics["rollout/status/max_turns"] == 1


def test_turn_estimator_scores_each_turn_against_the_same_turn_of_the_group(tiny_tokenizer):
    tok = tiny_tokenizer
    a = episode(tok, [say("action", "Is it a fruit?"), say("answer", "Banana"), say("answer", "Kiwi")])
    b = episode(tok, [say("action", "Is it red?")], max_turns=2, gen_uid="g-1")
    exp = build_experience([a, b], AdvantageSettings(estimator="turn"), pad_id=tok.pad_token_id)
    # returns (γ = 0.8): a = [0.64, 0.8, 1], b = [0, 0]; turns 0 and 1: two members, ±d/(√(2d²) + ε) each;
    # a's turn 2 has no sibling → 0.
    adv = exp.tensors["advantages"]
    for t, d in ((0, 0.32), (1, 0.4)):
        z = d / (math.sqrt(2 * d**2) + 1e-6)
        for row, traj, sign in ((0, a, 1), (1, b, -1)):
            span = traj.turn_spans[t]
            assert torch.allclose(adv[row, span.start : span.end], torch.full((span.end - span.start,), sign * z))
    last = a.turn_spans[2]
    assert adv[0, last.start : last.end].eq(0).all()
    assert adv[exp.tensors["response_mask"] == 0].abs().max() == 0


class BrokenTelepathy(TelepathyGym):
    async def _step(self, action):
        raise RuntimeError("the environment crashed")


def test_environment_exception_is_env_error_and_masked(tiny_tokenizer):
    tok = tiny_tokenizer
    broken = episode(tok, [say("action", "Is it a fruit?")], registry=GymRegistry((BrokenTelepathy,)), gen_uid="g-1")
    assert broken.status == "env_error" and broken.failed
    ok = episode(tok, [say("answer", "Kiwi")])
    exp = build_experience([ok, broken], AdvantageSettings(), pad_id=tok.pad_token_id)
    assert exp.trained == [0]  # not learned as a "zero reward" failure of the policy
    assert exp.metrics["rollout/status/env_error"] == 1
    assert exp.tensors["input_ids"].shape[0] == 1


def _audit(path):
    return json.dumps({"class_path": "mimesis_pl.data.audit.BatchAuditCallback", "init_args": {"path": str(path)}})


def test_tiny_grpo_fit_logs_and_resumes_with_the_next_prompts(tmp_path, monkeypatch):
    from mimesis_pl.cli import main

    monkeypatch.chdir(REPO)
    config = str(REPO / "configs" / "tiny" / "agent_grpo.yaml")
    common = [
        "fit",
        "--config",
        config,
        "--model.init_args.rollout.max_new_tokens=16",
        "--model.init_args.rollout.n_samples=2",
    ]
    straight = tmp_path / "straight.jsonl"
    main(
        common
        + [
            f"--trainer.logger.init_args.save_dir={tmp_path / 'a'}",
            "--trainer.max_steps=3",
            f"--trainer.callbacks+={_audit(straight)}",
        ]
    )
    ckpt_cb = json.dumps(
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(tmp_path / "ckpt"), "every_n_train_steps": 2, "save_top_k": -1},
        }
    )
    first = tmp_path / "first.jsonl"
    main(
        common
        + [
            f"--trainer.logger.init_args.save_dir={tmp_path / 'b'}",
            "--trainer.max_steps=2",
            f"--trainer.callbacks+={_audit(first)}",
            f"--trainer.callbacks+={ckpt_cb}",
        ]
    )
    ckpt = next((tmp_path / "ckpt").glob("*.ckpt"))
    second = tmp_path / "second.jsonl"
    main(
        common
        + [
            f"--trainer.logger.init_args.save_dir={tmp_path / 'c'}",
            "--trainer.max_steps=3",
            f"--trainer.callbacks+={_audit(second)}",
            f"--ckpt_path={ckpt}",
        ]
    )

    def digests(p):
        return [json.loads(line)["digest"] for line in p.read_text().splitlines()]

    assert digests(first) + digests(second) == digests(straight)

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = next((tmp_path / "a" / "tiny_agent_grpo").iterdir())
    events = EventAccumulator(str(run))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in (
        "rollout/episode_reward_mean",
        "rollout/success_rate",
        "rollout/turns_mean",
        "train/clipfrac",
        "time/user_simulator_s",
        "time/update_s",
        "time/old_logprobs_s",
        "rollout/reward",
        "train/approx_kl",
        "train/entropy",
        "train/logprob_mismatch_abs",
        "time/rollout_s",
        "time/generate_s",
    ):
        assert tag in tags, tag
    assert len(events.Scalars("train/updates")) == 3
    assert any(t.startswith("rollout/status/") for t in tags)
    assert (run / "config.yaml").is_file()


class _Fixed:
    """A rollout stage that hands the update a fixed experience every step."""

    def __init__(self, experience):
        self.experience = experience

    def setup(self, module):
        pass

    def teardown(self):
        pass

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass

    def collect(self, module, batch, batch_idx):
        import copy

        from mimesis_pl.rollout.step import RLStep

        return RLStep(experience=copy.copy(self.experience), metrics=dict(self.experience.metrics))

    def after_batch(self, module, batch_idx):
        pass


def _one_update(tiny_model_path, experience, force_old_pass: bool, monkeypatch):
    import lightning.pytorch as pl

    from mimesis_pl.data.prompts import GymPromptDataModule
    from mimesis_pl.modules import AgentGRPO
    from mimesis_pl.modules.settings import ModelSettings, PPOSettings

    module = AgentGRPO(
        policy=ModelSettings(model_path=str(tiny_model_path)), ppo=PPOSettings(mini_batch_size=8, micro_batch_size=1)
    )
    module.rollout_stage = _Fixed(experience)
    if force_old_pass:
        monkeypatch.setattr(AgentGRPO, "_has_dropout", lambda self: True)
    torch.manual_seed(0)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    trainer.fit(
        module, datamodule=GymPromptDataModule(files=[str(REPO / "assets/data/gyms/train/*.parquet")], batch_size=1)
    )
    monkeypatch.undo()
    return {k: v.detach().clone() for k, v in module.model.state_dict().items()}


def test_on_policy_shortcut_gives_the_same_update_as_an_old_logprob_pass(tiny_tokenizer, tiny_model_path, monkeypatch):
    tok = tiny_tokenizer
    a = episode(tok, [say("action", "Is it a fruit?"), say("answer", "Kiwi")])
    b = episode(tok, [say("answer", "Banana"), say("answer", "Kiwi")], gen_uid="g-1")
    b.turn_rewards = [0.0, 0.5]  # make the group informative
    exp = build_experience([a, b], AdvantageSettings(), pad_id=tok.pad_token_id)
    shortcut = _one_update(tiny_model_path, exp, False, monkeypatch)
    explicit = _one_update(tiny_model_path, exp, True, monkeypatch)
    for key in shortcut:
        assert torch.allclose(shortcut[key], explicit[key], atol=1e-6), key
