"""The update's typed boundary: a ``PolicyBatch`` in, the update's own metrics out (no caller dict filled)."""

from __future__ import annotations

import ast
import sys

import pytest
import torch

from mimesis_pl.modules import AgentGRPO
from mimesis_pl.modules.settings import ModelSettings, OptimSettings, PPOSettings
from mimesis_pl.rl.policy_batch import PolicyBatch, UpdateResult

from ..conftest import REPO, TINY_MODEL

sys.path.insert(0, str(REPO / "tests" / "recipes"))
from toy_grpo import ToyRollout, run_toy_grpo  # noqa: E402


def _tensors(rows: int = 2, width: int = 5) -> dict[str, torch.Tensor]:
    ids = torch.arange(rows * width).view(rows, width)
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "response_mask": (torch.arange(width) >= 3).long().expand(rows, width).clone(),
        "rollout_logprobs": torch.zeros(rows, width),
        "advantages": torch.ones(rows, width),
        "turn_index": torch.zeros_like(ids),  # collated too; not part of the update's inputs
    }


def test_policy_batch_takes_the_collated_rows_and_names_what_is_wrong():
    batch = PolicyBatch.from_tensors(_tensors(), trained=[0, 3], n_slots=4)
    assert batch.size == 2 and batch.trained == (0, 3) and batch.n_slots == 4
    assert batch.response_mask[0].tolist() == [0, 0, 0, 1, 1]
    t = _tensors()
    del t["rollout_logprobs"]
    with pytest.raises(ValueError, match=r"lack \['rollout_logprobs'\]"):
        PolicyBatch.from_tensors(t, trained=[0, 1], n_slots=2)
    t = _tensors()
    t["advantages"] = torch.ones(2, 4)
    with pytest.raises(ValueError, match=r"PolicyBatch.advantages is \(2, 4\), input_ids \(2, 5\)"):
        PolicyBatch.from_tensors(t, trained=[0, 1], n_slots=2)
    with pytest.raises(ValueError, match="3 trained slots for 2 rows"):
        PolicyBatch.from_tensors(_tensors(), trained=[0, 1, 2], n_slots=3)


def test_a_batch_with_nothing_to_train_returns_a_skip_without_touching_the_model():
    module = AgentGRPO(policy=ModelSettings(model_path=str(TINY_MODEL)))
    empty = PolicyBatch.from_tensors({}, trained=[], n_slots=4)
    assert empty.size == 0 and tuple(empty.response_mask[:, 1:].shape) == (0, 1)
    assert module.train_on(empty) == UpdateResult(trained=False, metrics={"train/skipped_empty_batch": 1.0})


class _RecordingGRPO(AgentGRPO):
    """Keeps what crossed the update's boundary."""

    def train_on(self, batch, *, extra=None):
        result = super().train_on(batch, extra=extra)
        self.crossed.append((batch, result))
        return result


def test_the_update_takes_a_policy_batch_and_returns_its_own_metrics():
    torch.manual_seed(0)
    module = _RecordingGRPO(
        policy=ModelSettings(model_path=str(TINY_MODEL)),
        optim=OptimSettings(lr=1e-3, weight_decay=0.0, schedule="constant"),
        ppo=PPOSettings(mini_batch_size=16, micro_batch_size=8, log_entropy=False),
    )
    module.crossed = []
    module.configure_model()
    run_toy_grpo(module, 1, ToyRollout(n_groups=2, n_samples=8, seed=0))
    [(batch, result)] = module.crossed
    assert isinstance(batch, PolicyBatch) and batch.size == 16 and batch.n_slots == 16
    assert result.trained
    # The update's own figures only: the step's rollout metrics are merged by the caller, not written into.
    assert not any(k.startswith("rollout/") for k in result.metrics), sorted(result.metrics)
    assert {"train/pg_loss", "train/grad_norm", "time/update_s", "train/logprob_mismatch_abs"} <= set(result.metrics)
    assert result.metrics["train/updates"] == 1.0 and result.metrics["train/skipped_steps"] == 0.0


def test_the_csd_term_is_free_of_lightning_and_of_the_module():
    """The CSD term (rl/csd_term.py) imports neither Lightning nor a LightningModule: what it needs from training comes
    in its TrainingHooks, so it can be read and run on its own (issue #38)."""
    tree = ast.parse((REPO / "mimesis_pl" / "rl" / "csd_term.py").read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not [m for m in imported if "lightning" in m or m.startswith(("mimesis_pl.modules", "..modules"))]
    assert "class CSDTerm" not in (REPO / "mimesis_pl" / "modules" / "agent_csd.py").read_text()


class _SignalThenNone(ToyRollout):
    """The toy's advantages on the first step, all zero after it (a sparse reward's groups without a success)."""

    def collect(self, module, batch, batch_idx: int):
        self.sign = 1.0 if int(module.trainer.global_step) == 0 else 0.0
        return super().collect(module, batch, batch_idx)


@pytest.mark.parametrize("skip", [False, True])
def test_an_all_zero_gradient_moves_no_weight_only_with_skip_empty_steps(skip):
    torch.manual_seed(0)
    module = AgentGRPO(
        policy=ModelSettings(model_path=str(TINY_MODEL)),
        optim=OptimSettings(lr=1e-3, weight_decay=0.0, schedule="constant"),
        ppo=PPOSettings(mini_batch_size=16, micro_batch_size=8, log_entropy=False, skip_empty_steps=skip),
    )
    module.configure_model()
    snapshots = []

    class Snap(_SignalThenNone):
        def collect(self, module, batch, batch_idx):
            snapshots.append([p.detach().clone() for p in module.model.parameters()])
            return super().collect(module, batch, batch_idx)

    trainer = run_toy_grpo(module, 3, Snap(n_groups=2, n_samples=8, seed=0))
    after = [p.detach() for p in module.model.parameters()]
    moved_after_signal = max((a - b).abs().max().item() for a, b in zip(snapshots[2], snapshots[1]))
    moved_by_empty = max((a - b).abs().max().item() for a, b in zip(after, snapshots[2]))
    assert trainer.global_step == 3  # an empty step still counts as an update slot
    if skip:  # Adam's momentum from step 1 would move every weight again; a skipped step moves none
        assert moved_after_signal == 0.0 and moved_by_empty == 0.0 and module.empty_steps == 2
    else:
        assert moved_by_empty > 0.0 and module.empty_steps == 0
