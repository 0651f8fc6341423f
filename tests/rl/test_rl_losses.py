"""Policy and CSD losses against hand-worked values (arithmetic in the comments) and gradients."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mimesis_pl.rl import aggregate_loss, csd_loss, losses, policy_loss, topk_reverse_kl

LN = math.log


def close(actual, expected, tol=1e-6):
    torch.testing.assert_close(
        torch.as_tensor(actual).to(torch.float64), torch.as_tensor(expected, dtype=torch.float64), atol=tol, rtol=tol
    )


# ---------------------------------------------------------------- policy loss


def _four_token_case():
    # old log-probs 0, so ρ = exp(ℓ); ε = 0.2, c = 3
    # a: A = +1, ρ = 1.5 → −Aρ = −1.5, −A·clip = −1.2 → max = −1.2 (clipped)
    # b: A = +1, ρ = 0.5 → −0.5, −0.8 → −0.5 (unclipped)
    # c: A = −1, ρ = 0.5 →  0.5,  0.8 → 0.8 (clipped); dual bound 3 → min(0.8, 3) = 0.8
    # d: A = −1, ρ = 5   →  5,    1.2 → 5;  dual bound 3 → min(5, 3) = 3 (dual clip active)
    logprobs = torch.tensor([[LN(1.5), LN(0.5), LN(0.5), LN(5.0)]], requires_grad=True)
    return logprobs, torch.zeros(1, 4), torch.tensor([[1.0, 1.0, -1.0, -1.0]]), torch.ones(1, 4)


def test_policy_loss_hand_worked_with_dual_clip():
    logprobs, old, adv, mask = _four_token_case()
    loss, metrics = policy_loss(logprobs, old, adv, mask)
    close(loss, (-1.2 - 0.5 + 0.8 + 3.0) / 4)  # = 0.525
    close(metrics["clipfrac"], 2 / 4)  # a and c
    close(metrics["clipfrac_lower"], 1 / 4)  # d
    # approx_kl = mean(ℓ_old − ℓ) = −ln(1.5·0.5·0.5·5)/4 = −ln(1.875)/4
    close(metrics["approx_kl"], -LN(1.875) / 4)


def test_policy_loss_gradient_hand_worked():
    # Only b is unclipped: ∂(−Aρ)/∂ℓ = −Aρ = −0.5, divided by 4 tokens. a, c are clipped and d is
    # held by the dual bound (a constant), so their gradient is 0.
    logprobs, old, adv, mask = _four_token_case()
    loss, _ = policy_loss(logprobs, old, adv, mask)
    loss.backward()
    close(logprobs.grad, [[0.0, -0.5 / 4, 0.0, 0.0]])


def test_policy_loss_without_dual_clip():
    logprobs, old, adv, mask = _four_token_case()
    loss, metrics = policy_loss(logprobs, old, adv, mask, dual_clip=None)
    close(loss, (-1.2 - 0.5 + 0.8 + 5.0) / 4)  # = 1.025: d keeps its full 5
    close(metrics["clipfrac_lower"], 0.0)


def test_dual_clip_only_touches_negative_advantages():
    # A = +1 and ρ = 5: −Aρ = −5, −A·1.2 = −1.2 → max = −1.2; a positive advantage is never dual-clipped
    loss, metrics = policy_loss(torch.tensor([[LN(5.0)]]), torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1))
    close(loss, -1.2)
    close(metrics["clipfrac_lower"], 0.0)


def test_asymmetric_clip():
    # A = +1, ρ = 1.5, clip_high = 0.28 → −min(1.5, 1.28) = −1.28
    loss, _ = policy_loss(
        torch.tensor([[LN(1.5)]]), torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1), clip_high=0.28
    )
    close(loss, -1.28)


def test_aggregation_modes_hand_worked():
    # ρ = 1 everywhere, so the per-token loss is −A.
    # A = [[1, 2, 3], [4, 9, 9], [7, 7, 7]], mask = [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    # token-mean:          −(1 + 2 + 3 + 4)/4 = −2.5
    # seq-mean-token-sum:  −((1 + 2 + 3) + 4)/2 = −5     (the empty third row does not count)
    # seq-mean-token-mean: −((6/3) + (4/1))/2 = −3
    adv = torch.tensor([[1.0, 2, 3], [4, 9, 9], [7, 7, 7]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]])
    zeros = torch.zeros(3, 3)
    for agg, expected in [("token-mean", -2.5), ("seq-mean-token-sum", -5.0), ("seq-mean-token-mean", -3.0)]:
        loss, _ = policy_loss(zeros, zeros, adv, mask, agg=agg)
        close(loss, expected)


def test_empty_mask_gives_zero_loss_and_zero_metrics():
    logprobs = torch.zeros(2, 3, requires_grad=True)
    loss, metrics = policy_loss(logprobs, torch.zeros(2, 3), torch.ones(2, 3), torch.zeros(2, 3))
    close(loss, 0.0)
    loss.backward()
    close(logprobs.grad, torch.zeros(2, 3))
    assert all(float(v) == 0.0 for v in metrics.values())


def test_policy_loss_accepts_bf16():
    logprobs, old, adv, mask = _four_token_case()
    low = logprobs.detach().to(torch.bfloat16).requires_grad_()
    loss, _ = policy_loss(low, old.to(torch.bfloat16), adv.to(torch.bfloat16), mask)
    loss.backward()
    assert low.grad.dtype == torch.bfloat16
    close(loss, 0.525, tol=2e-2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=16))
def test_on_policy_loss_is_minus_mean_advantage(advs):
    # ρ = 1: nothing is clipped and the loss is −mean(A)
    adv = torch.tensor([advs])
    logprobs = torch.randn(1, len(advs))
    loss, metrics = policy_loss(logprobs, logprobs.clone(), adv, torch.ones_like(adv))
    close(loss, -adv.mean(), tol=1e-5)
    close(metrics["clipfrac"], 0.0)
    close(metrics["approx_kl"], 0.0)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"agg": "mean"}, "agg=.*token-mean, seq-mean-token-sum, seq-mean-token-mean"),
        ({"dual_clip": 1.0}, "dual_clip"),
        ({"clip_low": 1.0}, "clip_low"),
        ({"clip_high": -0.1}, "clip_high"),
    ],
)
def test_policy_loss_bad_options(kwargs, needle):
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match=needle):
        policy_loss(x, x, x, x, **kwargs)


def test_policy_loss_shape_mismatch_names_the_argument():
    with pytest.raises(ValueError, match="advantages"):
        policy_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3))
    with pytest.raises(ValueError, match="logprobs"):
        policy_loss(torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.ones(3))


def test_aggregate_loss_unknown_mode():
    with pytest.raises(ValueError, match="seq-mean-token-sum-norm"):
        aggregate_loss(torch.zeros(1, 1), torch.ones(1, 1), "seq-mean-token-sum-norm")


# ---------------------------------------------------------------- CSD: sdar


def test_sdar_hand_worked_loss_gradient_and_metrics():
    # s = [−1, −2], t = [−0.5, −2.5] → Δ = t − s = [0.5, −0.5]; β = 2 → g = [σ(1), σ(−1)]
    #   σ(1) = 0.7310586, σ(−1) = 0.2689414
    # loss = (g0·0.5 + g1·(−0.5))/2 = (0.3655293 − 0.1344707)/2 = 0.1155293
    # ∂loss/∂s = −g/M = [−0.3655293, −0.1344707]
    s = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    t = torch.tensor([[-0.5, -2.5]])
    loss, metrics = csd_loss(s, t, torch.ones(1, 2), estimator="sdar", beta=2.0)
    close(loss, 0.1155293)
    loss.backward()
    close(s.grad, [[-0.3655293, -0.1344707]])
    close(metrics["gate_mean"], 0.5)  # σ(1) + σ(−1) = 1
    close(metrics["gate_active_ratio"], 0.5)
    close(metrics["teacher_gap_mean"], 0.0)
    close(metrics["gap_abs_mean"], 0.5)
    close(metrics["placebo_share"], 0.0)
    close(metrics["frac_tokens"], 1.0)


def test_sdar_gradient_is_minus_gate_times_student_gradient():
    # Student log-probs from a toy linear model; the parameter gradient must be
    # −(1/M) Σ m·g·∇s with g = σ(β·(t − s)).
    torch.manual_seed(0)
    theta = torch.randn(4, requires_grad=True)
    features = torch.randn(2, 3, 4)
    mask = torch.tensor([[1.0, 1, 0], [1, 0, 1]])
    teacher = torch.randn(2, 3)
    s = torch.nn.functional.logsigmoid(features @ theta)
    loss, _ = csd_loss(s, teacher, mask, estimator="sdar", beta=5.0)
    (grad,) = torch.autograd.grad(loss, theta, retain_graph=True)

    gate = torch.sigmoid(5.0 * (teacher - s.detach()))
    expected = torch.zeros(4)
    for b in range(2):
        for i in range(3):
            if mask[b, i]:
                (g_s,) = torch.autograd.grad(s[b, i], theta, retain_graph=True)
                expected -= gate[b, i] * g_s / mask.sum()
    close(grad, expected, tol=1e-6)


def test_sdar_beta_zero_gives_constant_half_gate():
    s = torch.tensor([[-1.0, -3.0]], requires_grad=True)
    loss, metrics = csd_loss(s, torch.tensor([[-4.0, 0.0]]), torch.ones(1, 2), beta=0.0)
    loss.backward()
    close(metrics["gate_mean"], 0.5)
    close(s.grad, [[-0.25, -0.25]])  # −0.5/M with M = 2


# ---------------------------------------------------------------- CSD: placebo correction


def test_placebo_equal_to_teacher_gives_zero_gap():
    s = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    t = torch.tensor([[-0.2, -3.0, -0.4]])
    for estimator in ("sdar", "ref", "k3"):
        loss, metrics = csd_loss(s, t, torch.ones(1, 3), estimator=estimator, placebo_logprobs=t.clone())
        close(loss, 0.0)
        close(metrics["teacher_gap_mean"], 0.0)
        close(metrics["gap_abs_mean"], 0.0)
        close(metrics["placebo_share"], 1.0)  # the whole raw gap was content-free
        close(metrics["placebo_token_frac"], 1.0)
        (grad,) = torch.autograd.grad(loss, s)
        if estimator == "sdar":
            close(grad, torch.full((1, 3), -0.5 / 3))  # zero gap → gate ½: the self-imitation of docs/decisions.md A7
        else:
            close(grad, torch.zeros(1, 3))  # a zero gap carries no signal


def test_placebo_where_present_raw_teacher_elsewhere():
    # s = [−1, −1], t = [−0.5, −0.5], p = [−0.8, NaN]
    # token 0: t̃ − s = t − p = 0.3; token 1 (no placebo): t − s = 0.5
    # gap mean 0.4, raw |t − s| mean 0.5 → placebo_share = 1 − 0.4/0.5 = 0.2
    s = torch.tensor([[-1.0, -1.0]])
    loss, metrics = csd_loss(
        s,
        torch.tensor([[-0.5, -0.5]]),
        torch.ones(1, 2),
        beta=0.0,
        placebo_logprobs=torch.tensor([[-0.8, float("nan")]]),
    )
    close(metrics["teacher_gap_mean"], 0.4)
    close(metrics["placebo_share"], 0.2)
    close(metrics["placebo_token_frac"], 0.5)
    close(loss, 0.5 * 0.4)  # gate ½ · mean gap


def test_teacher_nan_outside_mask_is_ignored():
    s = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    t = torch.tensor([[-0.5, float("nan")]])
    loss, metrics = csd_loss(s, t, torch.tensor([[1.0, 0.0]]), estimator="sdar", beta=0.0)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(s.grad).all()
    close(loss, 0.25)  # ½ · (−0.5 − (−1)) over one token
    assert all(torch.isfinite(v) for v in metrics.values())


# ---------------------------------------------------------------- CSD: ref, k3, distill


def test_placebo_target_hand_worked():
    student = torch.tensor([[-1.0, -2.0, -3.0]], dtype=torch.float64)
    teacher = torch.tensor([[-0.5, math.nan, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    placebo = torch.tensor([[-0.7, -9.0, math.nan]], dtype=torch.float64)
    t, target, has_placebo = losses.placebo_target(student, teacher, mask, placebo)
    # t: the teacher on masked tokens, the student (−2) on the unmasked one, whose NaN is dropped.
    close(t, [[-0.5, -2.0, -1.0]])
    # Token 0 has a placebo: t̃ = s + (t − p) = −1 + (−0.5 + 0.7) = −0.8. Token 1 is unmasked (its placebo −9 is
    # ignored), token 2's placebo is NaN: t̃ = t there.
    close(target, [[-0.8, -2.0, -1.0]])
    assert has_placebo.tolist() == [[True, False, False]]
    t, target, has_placebo = losses.placebo_target(student, teacher, mask, None)
    close(target, [[-0.5, -2.0, -1.0]])
    assert not has_placebo.any()


def test_csd_gap_metrics_hand_worked():
    student = torch.tensor([[-1.0, -2.0, -3.0]], dtype=torch.float64)
    teacher = torch.tensor([[-0.5, -2.0, -1.0]], dtype=torch.float64)
    target = torch.tensor([[-0.8, -2.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    has_placebo = torch.tensor([[True, False, False]])
    metrics = losses.csd_gap_metrics(student, teacher, target, has_placebo, mask, beta=5.0)
    # Masked tokens 0 and 2: Δ = t̃ − s = 0.2, 2.0; gates σ(5·0.2) = σ(1), σ(10), both > 0.5.
    close(metrics["gate_mean"], (1 / (1 + math.exp(-1.0)) + 1 / (1 + math.exp(-10.0))) / 2)
    close(metrics["gate_active_ratio"], 1.0)
    close(metrics["teacher_gap_mean"], 1.1)  # (0.2 + 2.0) / 2
    close(metrics["gap_abs_mean"], 1.1)
    close(metrics["raw_gap_abs_mean"], 1.25)  # |t − s| = 0.5, 2.0
    close(metrics["placebo_share"], 0.12)  # (1.25 − 1.1) / 1.25
    close(metrics["placebo_token_frac"], 0.5)
    close(metrics["frac_tokens"], 2 / 3)


def test_ref_hand_worked():
    # s = [[−1, −2, 0], [−1, 0, 0]], mask = [[1, 1, 0], [1, 0, 0]], t − s = Δ = [[1, 1, ·], [−1, ·, ·]]
    # row 0: Σ −Δ·s = −(1·−1 + 1·−2) = 3, n = 2 → 1.5
    # row 1: −(−1·−1) = −1, n = 1 → −1
    # masked: (1.5 − 1)/2 = 0.25
    # full with response_mask all ones (n = 3, 3): (3/3 − 1/3)/2 = 1/3
    s = torch.tensor([[-1.0, -2.0, 0.0], [-1.0, 0.0, 0.0]], requires_grad=True)
    t = torch.tensor([[0.0, -1.0, 5.0], [-2.0, 5.0, 5.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    loss, _ = csd_loss(s, t, mask, estimator="ref")
    close(loss, 0.25)
    full, _ = csd_loss(s, t, mask, estimator="ref", norm="full", response_mask=torch.ones(2, 3))
    close(full, 1 / 3)
    # gradient −Δ/n_b/B: row 0 [−1/2/2, −1/2/2, 0], row 1 [+1/1/2, 0, 0]
    loss.backward()
    close(s.grad, [[-0.25, -0.25, 0.0], [0.5, 0.0, 0.0]])


def test_k3_hand_worked_and_clamp():
    # x = t − s = [0, ln 2, −1] → e^x − x − 1 = [0, 2 − ln 2 − 1, e^−1 + 1 − 1] = [0, 0.3068528, 0.3678794]
    # token-mean = 0.6747322/3 = 0.2249107
    s = torch.zeros(1, 3)
    loss, _ = csd_loss(s, torch.tensor([[0.0, LN(2.0), -1.0]]), torch.ones(1, 3), estimator="k3")
    close(loss, (0.3068528 + 0.3678794) / 3)
    # x = 5 → e^5 − 6 = 142.4 is clamped to 10; x = 200 would overflow exp without the inner clamp
    s = torch.zeros(1, 2, requires_grad=True)
    clamped, _ = csd_loss(s, torch.tensor([[5.0, 200.0]]), torch.ones(1, 2), estimator="k3")
    close(clamped, 10.0)
    clamped.backward()
    close(s.grad, torch.zeros(1, 2))


def test_distill_hand_worked():
    # teacher top-2 probs [0.5, 0.25] → tail 0.25; student at those ids [0.25, 0.25] → tail 0.5
    # KL = Σ s·ln(s/t) = 0.25·ln(0.5) + 0.25·ln(1) + 0.5·ln(2) = 0.25·ln 2 = 0.1732868
    student = torch.log(torch.tensor([[[0.25, 0.25], [0.3, 0.3]]]))
    teacher = torch.log(torch.tensor([[[0.5, 0.25], [0.9, 0.05]]]))
    close(topk_reverse_kl(student, teacher)[0, 0], 0.25 * LN(2.0))
    mask = torch.tensor([[1.0, 0.0]])
    loss, _ = csd_loss(
        torch.zeros(1, 2),
        torch.zeros(1, 2),
        mask,
        estimator="distill",
        student_topk_logprobs=student,
        teacher_topk_logprobs=teacher,
    )
    close(loss, 0.25 * LN(2.0))
    full, _ = csd_loss(
        torch.zeros(1, 2),
        torch.zeros(1, 2),
        mask,
        estimator="distill",
        norm="full",
        response_mask=torch.ones(1, 2),
        student_topk_logprobs=student,
        teacher_topk_logprobs=teacher,
    )
    close(full, 0.25 * LN(2.0) / 2)


def test_distill_caps_the_topk_mass():
    # the teacher's top-2 hold all the mass → tail = log(1 − (1 − 1e−4)) = log(1e−4), still finite
    kl = topk_reverse_kl(torch.log(torch.tensor([[[0.4, 0.4]]])), torch.log(torch.tensor([[[0.5, 0.5]]])))
    # 2·0.4·ln(0.8) + 0.2·ln(0.2/1e−4)
    close(kl[0, 0], 0.8 * LN(0.8) + 0.2 * LN(0.2 / 1e-4), tol=1e-4)


def test_distill_two_positions_k2_value_and_gradient_by_hand():
    # KL = Σ_{k, tail} p_k (s_k − t_k), tails from 1 − Σ p. With the tail depending on s_k,
    # ∂KL/∂s_k = p_k·[(s_k − t_k) − (s_tail − t_tail)] = p_k·[ln(p_k/q_k) − ln(p_tail/q_tail)].
    # position 0: p = [.25, .25] tail .5, q = [.5, .25] tail .25
    #   KL = .25·ln .5 + 0 + .5·ln 2 = .25 ln 2; ∂ = [.25·(ln .5 − ln 2), .25·(0 − ln 2)] = [−.5 ln 2, −.25 ln 2]
    # position 1: p = [.5, .25] tail .25, q = [.25, .25] tail .5
    #   KL = .5·ln 2 + 0 + .25·ln .5 = .25 ln 2; ∂ = [.5·(ln 2 − ln .5), .25·(0 − ln .5)] = [ln 2, .25 ln 2]
    # masked mean over the 2 positions: loss = .25 ln 2, gradient = ∂ / 2
    student = torch.log(torch.tensor([[[0.25, 0.25], [0.5, 0.25]]], dtype=torch.float64)).requires_grad_()
    teacher = torch.log(torch.tensor([[[0.5, 0.25], [0.25, 0.25]]], dtype=torch.float64))
    x = torch.zeros(1, 2, dtype=torch.float64)
    loss, _ = csd_loss(
        x, x, torch.ones(1, 2), estimator="distill", student_topk_logprobs=student, teacher_topk_logprobs=teacher
    )
    close(loss, 0.25 * LN(2.0))
    loss.backward()
    ln2 = LN(2.0)
    close(student.grad, [[[-0.25 * ln2, -0.125 * ln2], [0.5 * ln2, 0.125 * ln2]]])


def test_distill_raises_an_unsampled_token_the_teacher_prefers_and_sdar_cannot():
    """The point of ``distill``: the student samples token 0, the coached teacher prefers token 2. One gradient step
    of distill on the student's head raises log p(2); the sdar step on the sampled token lowers it."""
    from mimesis_pl.rl.token_ops import HeadLogprobs

    def step(estimator):
        head = torch.nn.Linear(4, 4, bias=False)
        with torch.no_grad():  # one-hot hidden state: the logits are the head's first column [2, 1, 0, 0]
            head.weight.zero_()
            head.weight[:, 0] = torch.tensor([2.0, 1.0, 0.0, 0.0])
        hidden = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]])  # [B=1, T=1, H]
        sampled = torch.tensor([[0]])  # the student's own (most likely) token
        teacher_logp = torch.log_softmax(torch.tensor([1.0, 0.0, 3.0, -1.0]), -1)  # prefers 2, then 0
        ids = torch.tensor([[[2, 0]]])  # the teacher's top-2
        at = HeadLogprobs(hidden=hidden, lm_head=head, chunk_size=2)
        b, col = torch.tensor([0]), torch.tensor([0])
        s = at.at(b, col, sampled[0])[None]  # [1, 1] the sampled token's log-prob (a [n] id → [n])
        topk = {"student_topk_logprobs": at.at(b, col, ids[0])[None], "teacher_topk_logprobs": teacher_logp[ids]}
        loss, _ = csd_loss(s, teacher_logp[sampled], torch.ones(1, 1), estimator=estimator, **topk)
        loss.backward()
        before = torch.log_softmax(head.weight[:, 0].detach(), -1)
        after = torch.log_softmax(head.weight[:, 0].detach() - 1.0 * head.weight.grad[:, 0], -1)
        return before, after

    before, after = step("distill")
    assert after[2] > before[2] + 0.05  # the unsampled, teacher-preferred token gains mass
    assert after[0] < before[0]  # and the over-confident sampled token loses some
    before, after = step("sdar")
    assert after[2] < before[2]  # sdar only reweights the sampled token: token 2 can only lose mass


def test_distill_uses_the_raw_teacher_and_a_placebo_changes_only_the_metrics():
    student = torch.log(torch.tensor([[[0.25, 0.25], [0.3, 0.3]]]))
    teacher = torch.log(torch.tensor([[[0.5, 0.25], [0.9, 0.05]]]))
    s, t = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-0.5, -1.0]])
    topk = {"student_topk_logprobs": student, "teacher_topk_logprobs": teacher}
    raw, raw_m = csd_loss(s, t, torch.ones(1, 2), estimator="distill", **topk)
    placebo = torch.tensor([[-0.7, math.nan]])
    debiased, m = csd_loss(s, t, torch.ones(1, 2), estimator="distill", placebo_logprobs=placebo, **topk)
    close(debiased, raw)
    close(raw_m["gap_abs_mean"], 0.75)  # |t − s| = 0.5, 1.0
    close(m["gap_abs_mean"], (0.2 + 1.0) / 2)  # token 0 scored on t − p = 0.2
    close(m["placebo_token_frac"], 0.5)


@pytest.mark.parametrize("estimator", ["k3", "distill"])
def test_true_divergences_match_finite_differences(estimator):
    # k3 and distill are functions of s (the teacher is a constant), so gradcheck applies in float64.
    torch.manual_seed(1)
    t = torch.randn(2, 3, dtype=torch.float64) * 0.3 - 1.0
    mask = torch.tensor([[1.0, 1, 0], [0, 1, 1]], dtype=torch.float64)
    teacher_topk = torch.log_softmax(torch.randn(2, 3, 5, dtype=torch.float64), -1)[..., :3]

    if estimator == "k3":

        def fn(s):
            return csd_loss(s, t, mask, estimator="k3")[0]

        x = (torch.randn(2, 3, dtype=torch.float64) * 0.3 - 1.0).requires_grad_()
    else:

        def fn(s_topk):
            return csd_loss(
                t, t, mask, estimator="distill", student_topk_logprobs=s_topk, teacher_topk_logprobs=teacher_topk
            )[0]

        x = torch.log_softmax(torch.randn(2, 3, 5, dtype=torch.float64), -1)[..., :3].clone().requires_grad_()
    assert torch.autograd.gradcheck(fn, (x,))


def test_csd_accepts_bf16_student():
    s = torch.tensor([[-1.0, -2.0]], dtype=torch.bfloat16, requires_grad=True)
    loss, _ = csd_loss(s, torch.tensor([[-0.5, -2.5]], dtype=torch.bfloat16), torch.ones(1, 2), beta=2.0)
    loss.backward()
    assert s.grad.dtype == torch.bfloat16
    close(loss, 0.1155293, tol=1e-2)


def test_csd_empty_mask_keeps_the_graph_and_gives_zero():
    s = torch.zeros(1, 2, requires_grad=True)
    for estimator in ("sdar", "ref", "k3"):
        loss, metrics = csd_loss(s, torch.zeros(1, 2), torch.zeros(1, 2), estimator=estimator)
        close(loss, 0.0)
        (grad,) = torch.autograd.grad(loss, s)
        close(grad, torch.zeros(1, 2))
        assert all(float(v) == 0.0 for v in metrics.values())


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"estimator": "surrogate"}, "estimator=.*sdar, ref, k3, distill"),
        ({"norm": "sum"}, "norm=.*masked, full"),
        ({"estimator": "k3", "agg": "x"}, "agg="),
        ({"beta": -1.0}, "beta"),
        ({"estimator": "ref", "norm": "full"}, "response_mask"),
        ({"estimator": "distill"}, "student_topk_logprobs"),
        ({"placebo_logprobs": torch.zeros(2, 2)}, "placebo_logprobs"),
        (
            {
                "estimator": "distill",
                "student_topk_logprobs": torch.zeros(1, 2, 3),
                "teacher_topk_logprobs": torch.zeros(1, 2, 4),
            },
            "student_topk_logprobs",
        ),
    ],
)
def test_csd_bad_input(kwargs, needle):
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match=needle):
        csd_loss(x, x, torch.ones(1, 2), **kwargs)


def test_csd_shape_mismatch_names_the_argument():
    with pytest.raises(ValueError, match="teacher_logprobs"):
        csd_loss(torch.zeros(1, 2), torch.zeros(1, 3), torch.ones(1, 2))


# ---------------------------------------------------------------- CSD estimator registry


def test_each_registered_estimator_is_callable_on_its_own_and_matches_csd_loss():
    s = torch.tensor([[-1.0, -2.0, -0.5]], dtype=torch.float64)
    t = torch.tensor([[-0.5, -2.5, -0.5]], dtype=torch.float64)
    m = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    # sdar by hand: Δ = (0.5, −0.5); g = σ(2.5), σ(−2.5); loss = (g₀·0.5 + g₁·(−0.5)) / 2
    g0, g1 = 1 / (1 + math.exp(-2.5)), 1 / (1 + math.exp(2.5))
    close(losses.sdar_loss(student=s, target=t, mask=m, beta=5.0), (g0 * 0.5 - g1 * 0.5) / 2)
    direct = {
        "sdar": losses.sdar_loss(student=s, target=t, mask=m, beta=5.0),
        "ref": losses.ref_loss(student=s, target=t, mask=m, norm="masked", response_mask=None),
        "k3": losses.k3_loss(student=s, target=t, mask=m, agg="token-mean"),
    }
    for name, value in direct.items():
        close(csd_loss(s, t, m, estimator=name)[0], value)


def test_a_registered_estimator_is_dispatched_with_exactly_the_arguments_it_names():
    seen = {}

    @losses.register_csd_estimator("probe")
    def probe(*, target, mask, norm):
        seen.update(target=target, mask=mask, norm=norm)
        return (target * mask).sum()

    try:
        s, t, m = torch.zeros(1, 2), torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, 0.0]])
        loss, _ = csd_loss(s, t, m, estimator="probe", norm="full", response_mask=torch.ones(1, 2))
        close(loss, 1.0)
        assert seen["norm"] == "full" and seen["mask"].tolist() == [[1.0, 0.0]]
        with pytest.raises(ValueError, match="'probe' is already registered"):
            losses.register_csd_estimator("probe")(probe)
        with pytest.raises(ValueError, match=r"'other' asks for \['temperature'\]"):
            losses.register_csd_estimator("other")(lambda *, student, temperature: student.sum())
    finally:
        losses._CSD_ESTIMATORS.pop("probe")
    with pytest.raises(ValueError, match="estimator='probe' is not supported"):
        csd_loss(s, t, m, estimator="probe")
