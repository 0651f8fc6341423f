"""RL validation pieces: when it runs, the val/* scalars (hand-worked), the best checkpoint, engine memory."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.rollout.engines import VLLMEngineSettings
from mimesis_pl.rollout.engines.sglang import sglang_mem_fraction
from mimesis_pl.rollout.engines.vllm import CPU_KV_CACHE_BYTES, vllm_llm_kwargs
from mimesis_pl.rollout.validation import (
    BestCheckpoint,
    ValidationEpisode,
    ValidationSettings,
    merge_summaries,
    summarize,
    validation_due,
    validation_metrics,
)


def test_validation_schedule():
    s = ValidationSettings(val_every_n_steps=5, val_before_train=False, val_at_end=True)
    assert [n for n in range(13) if validation_due(n, s)] == [5, 10]
    assert validation_due(12, s, is_last=True) and not validation_due(0, s)
    before = ValidationSettings(val_every_n_steps=None, val_before_train=True, val_at_end=False)
    assert [n for n in range(13) if validation_due(n, before, is_last=n == 12)] == [0]
    with pytest.raises(ValueError, match="val_every_n_steps"):
        ValidationSettings(val_every_n_steps=0).check()
    with pytest.raises(ValueError, match="best_metric"):
        ValidationSettings(best_metric="reward").check()
    # A typo of a logged name fails here, not after the first validation run.
    with pytest.raises(ValueError, match=r"best_metric='val/cor' is never logged"):
        ValidationSettings(best_metric="val/cor").check()
    for name in ("val/core", "val/success_rate", "val/reward/TurtleGym", "val/status/finished"):
        ValidationSettings(best_metric=name).check()


def test_metrics_merge_ranks_and_average_sources_equally():
    rank0 = summarize(
        [
            ValidationEpisode("travel", 1.0, True, 3, "finished"),
            ValidationEpisode("travel", 0.0, False, 16, "max_turns"),
        ]
    )
    rank1 = summarize(
        [
            ValidationEpisode("travel", 0.5, False, 4, "finished"),
            ValidationEpisode("turtle", 0.0, False, 2, "env_error"),
        ]
    )
    m = validation_metrics(merge_summaries([rank0, rank1]))
    # 4 episodes: reward (1 + 0 + 0.5 + 0) / 4 = 0.375; travel mean 1.5 / 3 = 0.5, turtle 0 -> core 0.25
    assert m["val/reward"] == pytest.approx(0.375)
    assert m["val/reward/travel"] == pytest.approx(0.5) and m["val/reward/turtle"] == 0.0
    assert m["val/core"] == pytest.approx(0.25)
    assert m["val/success_rate"] == 0.25 and m["val/turns_mean"] == pytest.approx(25 / 4)
    assert m["val/episodes"] == 4.0
    assert (m["val/status/finished"], m["val/status/max_turns"], m["val/status/env_error"]) == (2.0, 1.0, 1.0)


class _Strategy:
    def __init__(self):
        self.removed = []

    def remove_checkpoint(self, path):
        self.removed.append(path)


class _Trainer:
    is_global_zero = True

    def __init__(self):
        self.global_step = 0
        self.strategy = _Strategy()
        self.saved = []

    def save_checkpoint(self, path):
        self.saved.append(path)


def test_best_checkpoint_keeps_only_the_best(tmp_path):
    best, trainer = BestCheckpoint("val/core", "max"), _Trainer()
    for step, value in [(0, 0.2), (5, 0.1), (10, 0.4), (15, 0.4)]:
        trainer.global_step = step
        best.update(trainer, {"val/core": value}, tmp_path)
    assert trainer.saved == [str(tmp_path / "best-step=0.ckpt"), str(tmp_path / "best-step=10.ckpt")]
    assert trainer.strategy.removed == [str(tmp_path / "best-step=0.ckpt")]  # a tie does not replace the best
    assert json.loads((tmp_path / "best.json").read_text())["step"] == 10
    resumed = BestCheckpoint("val/core", "max")
    resumed.load_state_dict(best.state_dict())
    assert (resumed.best, resumed.path) == (0.4, str(tmp_path / "best-step=10.ckpt"))
    with pytest.raises(KeyError, match="val/reward"):
        BestCheckpoint("val/nothing").update(trainer, {"val/reward": 1.0}, tmp_path)


def test_engines_split_device_memory_between_the_ranks_on_it():
    sized = VLLMEngineSettings(gpu_memory_utilization=0.5, kv_cache_memory_bytes=1 << 30)
    one = vllm_llm_kwargs(sized, "m")
    assert (one["gpu_memory_utilization"], one["kv_cache_memory_bytes"]) == (0.5, 1 << 30)
    two = vllm_llm_kwargs(sized, "m", ranks_per_device=2)
    assert (two["gpu_memory_utilization"], two["kv_cache_memory_bytes"]) == (0.25, 1 << 29)
    # on CPU, several ranks get a bounded default instead of vLLM's per-engine share of host memory
    cpu = vllm_llm_kwargs(VLLMEngineSettings(), "m", ranks_per_device=4, on_cpu=True)
    assert cpu["kv_cache_memory_bytes"] == CPU_KV_CACHE_BYTES // 4
    # one process: vLLM's own default
    assert "kv_cache_memory_bytes" not in vllm_llm_kwargs(VLLMEngineSettings(), "m", on_cpu=True)
    passed = VLLMEngineSettings(engine_kwargs={"kv_cache_memory_bytes": 7})
    assert vllm_llm_kwargs(passed, "m", ranks_per_device=2)["kv_cache_memory_bytes"] == 7
    assert sglang_mem_fraction(0.5, 2) == 0.25
    with pytest.raises(ValueError, match="ranks_per_device"):
        vllm_llm_kwargs(VLLMEngineSettings(), "m", ranks_per_device=0)


def test_training_validation_and_evaluation_share_one_turn_budget_and_reference_optimisers():
    from dataclasses import fields

    import yaml

    from mimesis_pl.eval.agent_backend import EngineAgentSettings, OpenAIChatAgentSettings
    from mimesis_pl.modules.agent_grpo import REFERENCE_RL_OPTIM
    from mimesis_pl.modules.settings import OptimSettings
    from mimesis_pl.rollout.settings import RolloutSettings

    from ..conftest import REPO

    def default(cls, name):
        return next(f.default for f in fields(cls) if f.name == name)

    agent_budgets = {default(EngineAgentSettings, "max_new_tokens"), default(OpenAIChatAgentSettings, "max_new_tokens")}
    assert agent_budgets == {RolloutSettings().max_new_tokens} == {8192}
    assert ValidationSettings().max_new_tokens is None  # validation takes the training rollout's
    # the shipped evaluation configs leave the budget to the default, the training configs set the same
    for name in ("eval_agent.yaml", "eval_replay.yaml"):
        agent = yaml.safe_load((REPO / "configs" / name).read_text())["model"]["init_args"]["agent"]["init_args"]
        assert "max_new_tokens" not in agent, name
    grpo = yaml.safe_load((REPO / "configs" / "agent_grpo.yaml").read_text())
    assert grpo["model"]["init_args"]["rollout"]["max_new_tokens"] == 8192
    # reference optimiser: torch AdamW betas and eps; RL lr 1e-6 constant, weight decay 0.01, no warm-up
    assert (OptimSettings().betas, OptimSettings().eps) == ((0.9, 0.999), 1e-8)
    rl = REFERENCE_RL_OPTIM
    assert (rl.lr, rl.weight_decay, rl.schedule, rl.warmup_ratio, rl.warmup_steps) == (
        1e-6,
        0.01,
        "constant",
        0.0,
        None,
    )
