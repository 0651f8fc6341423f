"""The off-policy correction (rl/behaviour.py): hand-worked weights, w ≡ 1 leaves today's loss, and a stale-sample
bandit whose uncorrected gradient is off while the corrected one is not."""

from __future__ import annotations

import math

import pytest
import torch

from mimesis_pl.modules.settings import PPOSettings
from mimesis_pl.rl.behaviour import behaviour_weights, staleness, weight_gradient
from mimesis_pl.rl.losses import csd_loss, policy_loss


def test_weights_by_hand_truncate_and_mask():
    prox = torch.tensor([[math.log(0.5), math.log(0.3), math.log(0.9), 0.0]])
    behav = torch.tensor([[math.log(0.25), math.log(0.6), math.log(0.1), 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    w, m = behaviour_weights(prox, behav, mask, cap=5.0)
    # raw ratios 2, 0.5, 9 (past the cap: 5), and 1 outside the mask
    assert w.tolist()[0] == pytest.approx([2.0, 0.5, 5.0, 1.0], rel=1e-6)
    assert m["behaviour_weight_mean"] == pytest.approx(7.5 / 3, rel=1e-6)
    assert m["behaviour_weight_clipped_frac"] == pytest.approx(1 / 3)
    kl = sum(r - 1 - math.log(r) for r in (2.0, 0.5, 9.0)) / 3
    assert m["behaviour_kl"] == pytest.approx(kl, rel=1e-5)
    w_mask, _ = behaviour_weights(prox, behav, mask, cap=5.0, mode="mask")
    assert w_mask.tolist()[0] == pytest.approx([2.0, 0.5, 0.0, 1.0], rel=1e-6)


def test_weights_refuse_a_cap_below_one_naming_the_key():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="behaviour_weight_cap"):
        behaviour_weights(x, x, x, cap=0.5)
    with pytest.raises(ValueError, match="model.init_args.ppo.behaviour_weight_cap"):
        PPOSettings(behaviour_weight_cap=0.9)


def test_correction_default_follows_staleness_and_none_is_refused_with_stale_rollouts():
    assert PPOSettings().correction_for(0) == "none"
    assert PPOSettings().correction_for(1) == "decoupled"
    assert PPOSettings(behaviour_correction="decoupled").correction_for(0) == "decoupled"
    with pytest.raises(ValueError, match="behaviour_correction: none .*rollout.max_staleness=1"):
        PPOSettings(behaviour_correction="none").correction_for(1)


def test_unit_weights_leave_the_losses_and_gradients_bit_for_bit():
    g = torch.Generator().manual_seed(3)
    lp = (torch.randn(3, 7, generator=g) - 2).requires_grad_(True)
    old, adv = lp.detach() + 0.1 * torch.randn(3, 7, generator=g), torch.randn(3, 7, generator=g)
    teacher = lp.detach() + torch.randn(3, 7, generator=g)
    mask = (torch.rand(3, 7, generator=g) > 0.3).float()
    ones = torch.ones(3, 7)
    for weighted in (False, True):
        x = weight_gradient(lp, ones) if weighted else lp
        pg, _ = policy_loss(x, old, adv, mask)
        csd, _ = csd_loss(x, teacher, mask)
        (grad,) = torch.autograd.grad(pg + csd, lp)
        if not weighted:
            today = (pg.detach(), csd.detach(), grad)
    assert torch.equal(pg.detach(), today[0]) and torch.equal(csd.detach(), today[1]) and torch.equal(grad, today[2])


def _bandit(scale: float):
    g = torch.Generator().manual_seed(0)
    theta_prox = torch.randn(8, generator=g, dtype=torch.float64)
    theta_behav = theta_prox + scale * torch.randn(8, generator=g, dtype=torch.float64)
    value = torch.randn(8, generator=g, dtype=torch.float64)
    # 10^5 "samples" of π_behav with its exact frequencies (no sampling noise in the check)
    counts = torch.round(torch.softmax(theta_behav, 0) * 100_000).long()
    actions = torch.repeat_interleave(torch.arange(8), counts)[None]
    return theta_prox, theta_behav, value, actions


def _exact_gradient(theta_prox, value, term):
    """∇θ of E_{a~π_prox}[term(a)] with term the per-action loss of a sampled token (on-policy expectation)."""
    theta = theta_prox.clone().requires_grad_(True)
    probs = torch.softmax(theta, 0)
    logp = torch.log_softmax(theta, 0)
    (grad,) = torch.autograd.grad((probs.detach() * term(logp)).sum(), theta)
    return grad


def _sampled_gradient(theta_prox, theta_behav, actions, loss_of, corrected: bool, cap: float = 5.0):
    theta = theta_prox.clone().requires_grad_(True)
    lp = torch.log_softmax(theta, 0)[actions]
    mask = torch.ones_like(lp)
    if corrected:
        w, _ = behaviour_weights(lp.detach(), torch.log_softmax(theta_behav, 0)[actions], mask, cap=cap)
        lp = weight_gradient(lp, w)
    (grad,) = torch.autograd.grad(loss_of(lp, actions, mask), theta)
    return grad


def _rel(a, b) -> float:
    return float((a - b).norm() / b.norm())


def test_bandit_pg_gradient_from_stale_samples_is_off_uncorrected_and_right_corrected():
    theta_prox, theta_behav, adv, actions = _bandit(scale=0.5)  # KL(behav‖prox) ≈ 0.035
    exact = _exact_gradient(theta_prox, adv, lambda logp: -adv * logp)  # PPO's gradient at ρ = 1: −A∇logπ

    def pg(lp, a, mask):
        return policy_loss(lp, lp.detach(), adv[a], mask)[0]

    off = _rel(_sampled_gradient(theta_prox, theta_behav, actions, pg, corrected=False), exact)
    fixed = _rel(_sampled_gradient(theta_prox, theta_behav, actions, pg, corrected=True), exact)
    assert 0.10 <= off <= 0.50, off  # 0.28 measured
    assert fixed < 0.01, fixed  # 2e-5 measured (the frequencies' rounding)


def test_bandit_csd_gradient_is_corrected_the_same_way():
    theta_prox, theta_behav, teacher_shift, actions = _bandit(scale=0.5)
    beta = 5.0
    gate = torch.sigmoid(beta * teacher_shift)  # the teacher's log-prob is the student's + shift: Δ = shift
    exact = _exact_gradient(theta_prox, teacher_shift, lambda logp: -gate * logp)  # sdar: −g∇s per token

    def sdar(lp, a, mask):
        return csd_loss(lp, lp.detach() + teacher_shift[a], mask, estimator="sdar", beta=beta)[0]

    off = _rel(_sampled_gradient(theta_prox, theta_behav, actions, sdar, corrected=False), exact)
    fixed = _rel(_sampled_gradient(theta_prox, theta_behav, actions, sdar, corrected=True), exact)
    assert off > 0.05, off
    assert fixed < 0.01, fixed


def test_staleness_bound_is_asserted():
    assert staleness(5, [4, 4, 5], bound=1) == (pytest.approx(2 / 3), 1.0)  # gaps 1, 1, 0
    with pytest.raises(RuntimeError, match="rollout.max_staleness=1"):
        staleness(5, [3], bound=1)
    with pytest.raises(RuntimeError, match="staleness out of bounds"):
        staleness(5, [6], bound=2)


def _microbatch_grad(correction: str, behav_shift: torch.Tensor):
    """The PG micro-batch loss of PPOModule on a 1×5 batch: gradient wrt the student log-probs, and metrics."""
    from types import SimpleNamespace

    from mimesis_pl.modules.ppo_module import PPOModule
    from mimesis_pl.rl.policy_batch import LossInputs, PolicyBatch

    g = torch.Generator().manual_seed(1)
    prox = torch.randn(1, 4, generator=g) - 2.0
    ids = torch.arange(5)[None]
    rollout = torch.zeros(1, 5)
    rollout[:, 1:] = prox + behav_shift  # column j of the student scores token j + 1
    ones = torch.ones(1, 5, dtype=torch.long)
    batch = PolicyBatch(ids, ones, ones, rollout, torch.ones(1, 5), (0,), 1)
    inputs = LossInputs(batch=batch, response_mask=torch.ones(1, 4), advantages=torch.ones(1, 4), old_logprobs=None)
    fake = SimpleNamespace(ppo=PPOSettings(), behaviour_correction=correction)
    logprobs = prox.clone().requires_grad_(True)
    loss, metrics = PPOModule._microbatch_loss(
        fake, inputs, torch.tensor([0]), logprobs, prox, share=1.0, world=1, n_micro=1, extra=None
    )
    (grad,) = torch.autograd.grad(loss, logprobs)
    return grad, metrics


def test_the_update_weights_each_token_by_prox_over_behaviour():
    none, m_none = _microbatch_grad("none", torch.zeros(1, 4))
    agree, m_agree = _microbatch_grad("decoupled", torch.zeros(1, 4))
    assert torch.equal(agree, none) and "behaviour_weight_mean" not in m_none
    assert m_agree["behaviour_weight_mean"] == 1.0
    # π_behav half of π_prox on token 1 (w = 2), 20× less likely on token 3 (w = 20, truncated at 5)
    shift = torch.tensor([[0.0, -math.log(2.0), 0.0, -math.log(20.0)]])
    stale, m_stale = _microbatch_grad("decoupled", shift)
    torch.testing.assert_close(stale, none * torch.tensor([[1.0, 2.0, 1.0, 5.0]]))
    assert m_stale["behaviour_weight_clipped_frac"] == pytest.approx(0.25)
