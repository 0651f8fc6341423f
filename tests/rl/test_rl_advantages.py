"""Advantage estimators against hand-worked values (arithmetic in the comments) and properties."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mimesis_pl.rl import (
    foldgrpo_advantages,
    grpo_multiturn_advantages,
    grpo_outcome_advantages,
    grpo_turn_advantages,
    trajectory_score,
    turn_credits,
    turn_index_from_spans,
)
from mimesis_pl.spans import TurnSpan

EPS = 1e-6


def close(actual, expected, tol=1e-6):
    torch.testing.assert_close(
        torch.as_tensor(actual, dtype=torch.float32),
        torch.as_tensor(expected, dtype=torch.float32),
        atol=tol,
        rtol=tol,
    )


# ---------------------------------------------------------------- turn credits


def test_equalized_credits_are_one():
    close(turn_credits([0.3, 0.0, 0.7], "equalized", 0.8), [1.0, 1.0, 1.0])


def test_r2g_credits_hand_worked():
    # γ = 0.5, r = [1, 0, 2]:
    # c2 = 2; c1 = 0 + 0.5·2 = 1; c0 = 1 + 0.5·1 = 1.5
    close(turn_credits([1.0, 0.0, 2.0], "r2g", 0.5), [1.5, 1.0, 2.0])


def test_r2g_with_gamma_zero_is_the_turn_reward():
    # γ = 0: c_t = r_t + 0·c_{t+1}
    close(turn_credits([0.2, 0.4, 0.6], "r2g", 0.0), [0.2, 0.4, 0.6])


def test_em_credits_hand_worked():
    # c = 0.5 + 0.5·(1 − e^(−2r)) / (1 − e^(−2))
    # r = 0   → 0.5
    # r = 1   → 0.5 + 0.5·1 = 1
    # r = 0.5 → 0.5 + 0.5·(1 − e^(−1)) / (1 − e^(−2)) = 0.5 + 0.5·0.6321206/0.8646647 = 0.8655293
    close(turn_credits([0.0, 1.0, 0.5], "em"), [0.5, 1.0, 0.8655293])


def test_credits_of_no_turns_are_empty():
    assert turn_credits([], "r2g", 0.8).shape == (0,)


@settings(max_examples=50, deadline=None)
@given(
    rewards=st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=12),
    gamma=st.floats(0, 1),
)
def test_r2g_credits_satisfy_the_recursion(rewards, gamma):
    c = turn_credits(rewards, "r2g", gamma)
    r = torch.tensor(rewards, dtype=torch.float32)
    close(c[-1], r[-1], tol=1e-5)
    close(c[:-1], r[:-1] + gamma * c[1:], tol=1e-5)


# ---------------------------------------------------------------- trajectory score


def test_trajectory_scores_hand_worked():
    r = [1.0, 0.0, 0.5]
    close(trajectory_score(r, "mean"), 0.5)  # (1 + 0 + 0.5) / 3
    close(trajectory_score(r, "sum"), 1.5)  # 1 + 0 + 0.5 — a real sum
    close(trajectory_score(r, "r2g", 0.5), 1.125)  # 1 + 0.5·0 + 0.25·0.5


def test_trajectory_score_of_no_turns_is_zero():
    for method in ("mean", "sum", "r2g"):
        close(trajectory_score([], method), 0.0)


def test_r2g_score_equals_first_r2g_credit():
    r = [0.1, 0.0, 0.9, 0.3]
    close(trajectory_score(r, "r2g", 0.8), turn_credits(r, "r2g", 0.8)[0])


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: turn_credits([1.0], "R2G"), "equalized, r2g, em"),
        (lambda: trajectory_score([1.0], "Sum"), "mean, sum, r2g"),
        (lambda: turn_credits([1.0], "r2g", 1.5), "gamma"),
        (lambda: turn_credits([[1.0]], "r2g"), "turn_rewards"),
    ],
)
def test_credit_and_score_bad_input(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


# ---------------------------------------------------------------- outcome GRPO


def test_outcome_advantages_hand_worked():
    # group p: scores 1, 2, 3 → μ = 2, σ = √((1 + 0 + 1)/2) = 1 → z = (s − 2)/(1 + ε)
    # group q: a single trajectory → μ = 0, σ = 1 → z = 5/(1 + ε)
    adv = grpo_outcome_advantages(torch.tensor([1.0, 2.0, 5.0, 3.0]), ["p", "p", "q", "p"])
    close(adv, [-1 / (1 + EPS), 0.0, 5 / (1 + EPS), 1 / (1 + EPS)])


def test_outcome_advantages_without_std():
    adv = grpo_outcome_advantages(torch.tensor([1.0, 2.0, 5.0, 3.0]), ["p", "p", "q", "p"], norm_by_std=False)
    close(adv, [-1.0, 0.0, 5.0, 1.0])


def test_outcome_advantages_group_of_one_and_tensor_ids():
    adv = grpo_outcome_advantages(torch.tensor([0.7]), torch.tensor([42]))
    close(adv, [0.7 / (1 + EPS)])


def test_outcome_advantages_equal_scores_give_zero():
    close(grpo_outcome_advantages(torch.tensor([0.5, 0.5, 0.5]), [0, 0, 0]), [0.0, 0.0, 0.0])


def test_outcome_advantages_bad_input():
    with pytest.raises(ValueError, match="group_ids"):
        grpo_outcome_advantages(torch.tensor([1.0, 2.0]), ["a"])
    with pytest.raises(ValueError, match="group_ids"):
        grpo_outcome_advantages(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="scores"):
        grpo_outcome_advantages(torch.ones(2, 2), [0, 0])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-5, 5, allow_nan=False)), min_size=1, max_size=24))
def test_outcome_zscores_are_centred_and_scaled_per_group(rows):
    groups = [g for g, _ in rows]
    scores = torch.tensor([s for _, s in rows], dtype=torch.float32)
    adv = grpo_outcome_advantages(scores, groups)
    for g in set(groups):
        sel = torch.tensor([x == g for x in groups])
        if sel.sum() < 2:
            close(adv[sel], scores[sel] / (1 + EPS), tol=1e-5)
        elif scores[sel].std() > 1e-2:
            close(adv[sel].sum(), 0.0, tol=1e-4)
            close(adv[sel].std(), 1.0, tol=1e-3)


# ---------------------------------------------------------------- multi-turn GRPO


def test_multiturn_hand_worked_r2g():
    # γ = 0.5, one group of two trajectories, T = 6.
    # traj 0: rewards [0, 1]; tokens: turn 0 at 1-2, turn 1 at 4.
    #   credits c1 = 1, c0 = 0 + 0.5·1 = 0.5; score S0 = 0 + 0.5·1 = 0.5
    # traj 1: rewards [0, 0]; credits [0, 0]; S1 = 0
    # μ = 0.25, σ = √((0.25² + 0.25²)/1) = √0.125 → z = ±0.25/(√0.125 + ε) ≈ ±0.7071
    # traj 0: token credits [0, .5, .5, 0, 1, 0], Σ = 2, n = 3 → A = c·z·3/2
    # traj 1: all credits zero → "uniform": z on each generated token; "none": zeros
    turn_index = torch.tensor([[-1, 0, 0, -1, 1, -1], [-1, 0, -1, 1, 1, 1]])
    z = 0.25 / (math.sqrt(0.125) + EPS)
    adv = grpo_multiturn_advantages(turn_index, [[0.0, 1.0], [0.0, 0.0]], ["g", "g"], gamma=0.5)
    close(adv[0], [0.0, 0.75 * z, 0.75 * z, 0.0, 1.5 * z, 0.0])
    close(adv[1], [0.0, -z, 0.0, -z, -z, -z])
    none = grpo_multiturn_advantages(turn_index, [[0.0, 1.0], [0.0, 0.0]], ["g", "g"], gamma=0.5, zero_credit="none")
    close(none[0], adv[0])
    close(none[1], torch.zeros(6))


def test_multiturn_hand_worked_em_credit_sum_score():
    # traj 0: rewards [1, 0] → EM credits [1, 0.5], sum score 1; tokens turn 0, turn 1, turn 1
    # traj 1: rewards [0]    → EM credits [0.5],    sum score 0; tokens turn 0, turn 0, none
    # μ = 0.5, σ = √(0.25 + 0.25) = 0.7071068 → z = ±0.5/(0.7071068 + ε)
    # traj 0: credits [1, .5, .5], Σ = 2, n = 3 → A = c·z·3/2 = [1.5z, .75z, .75z]
    # traj 1: credits [.5, .5, 0], Σ = 1, n = 2 → A = c·(−z)·2/1 = [−z, −z, 0]
    z = 0.5 / (math.sqrt(0.5) + EPS)
    adv = grpo_multiturn_advantages(
        torch.tensor([[0, 1, 1], [0, 0, -1]]), [[1.0, 0.0], [0.0]], [7, 7], credit="em", score="sum"
    )
    close(adv, [[1.5 * z, 0.75 * z, 0.75 * z], [-z, -z, 0.0]])


def test_multiturn_equalized_mean_reproduces_outcome_grpo():
    turn_index = torch.tensor([[0, 0, 1, -1], [-1, 0, 0, 0], [0, 1, 2, 2]])
    rewards = [[1.0, 0.0], [0.5], [0.0, 1.0, 1.0]]
    groups = ["a", "a", "b"]
    adv = grpo_multiturn_advantages(turn_index, rewards, groups, credit="equalized", score="mean")
    scores = torch.tensor([trajectory_score(r, "mean") for r in rewards])
    z = grpo_outcome_advantages(scores, groups)
    close(adv, z[:, None] * (turn_index >= 0))


def test_multiturn_group_of_one_uses_raw_score():
    # a lone trajectory: μ = 0, σ = 1 → z = S/(1 + ε); R2G γ = 0.8, r = [0, 1] → S = 0.8
    # credits [0.8, 1] on tokens [0, 1] → Σ = 1.8, n = 2 → A = c·z·2/1.8
    z = 0.8 / (1 + EPS)
    adv = grpo_multiturn_advantages(torch.tensor([[0, 1]]), [[0.0, 1.0]], ["solo"])
    close(adv, [[0.8 * z * 2 / 1.8, 1.0 * z * 2 / 1.8]])


def test_no_length_bias_between_short_and_long_trajectories():
    # Same outcome (one success at the end, score "sum" = 1) in 2 turns / 3 tokens and in
    # 4 turns / 11 tokens; a failure in the same group. Both successes have z = the same value and
    # their mean advantage over credited tokens is that z — the long one does not get more.
    short = torch.tensor([0, 1, 1] + [-1] * 9)
    long = torch.tensor([0, 0, 0, -1, 1, 1, 2, 2, 2, 3, 3, 3])
    fail = torch.tensor([0, 0, -1, 1] + [-1] * 8)
    adv = grpo_multiturn_advantages(
        torch.stack([short, long, fail]),
        [[0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0]],
        ["g"] * 3,
        score="sum",
    )
    mean_short = adv[0][short >= 0].mean()
    mean_long = adv[1][long >= 0].mean()
    close(mean_short, mean_long)
    assert mean_short > 0
    # the failure has zero credits: the uniform fallback still pushes it down
    assert (adv[2][fail >= 0] < 0).all()


def test_mixed_sign_credits_stay_bounded_and_keep_the_sign_of_z():
    # γ = 0.5, r = [1, −1] → credits c1 = −1, c0 = 1 + 0.5·(−1) = 0.5; one token per turn.
    # The reference's c·z·n/Σc has Σc = −0.5 → A = [−2z, 4z] (turn 0 flipped). Here shares are
    # |c|: [0.5, 1], mean 0.75 → A = z·[2/3, 4/3]; their mean is z.
    turn_index = torch.tensor([[0, 1], [0, -1]])
    adv = grpo_multiturn_advantages(turn_index, [[1.0, -1.0], [-2.0]], ["g", "g"], gamma=0.5)
    # scores: S0 = 1 + 0.5·(−1) = 0.5, S1 = −2 → μ = −0.75, σ = √(2·1.25²) → z0 = 1.25/(σ + ε)
    z0 = 1.25 / (math.sqrt(2 * 1.25**2) + EPS)
    close(adv[0], [z0 * 2 / 3, z0 * 4 / 3])
    assert torch.isfinite(adv).all()


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    batch=st.integers(1, 6),
    credit=st.sampled_from(["equalized", "r2g", "em"]),
    score=st.sampled_from(["mean", "sum", "r2g"]),
    signed=st.booleans(),
)
def test_mean_advantage_over_credited_tokens_is_the_zscore(data, batch, credit, score, signed):
    low = -1.0 if signed else 0.0
    rewards = [
        data.draw(st.lists(st.sampled_from([low, 0.0, 0.25, 1.0]), min_size=1, max_size=4)) for _ in range(batch)
    ]
    groups = data.draw(st.lists(st.integers(0, 1), min_size=batch, max_size=batch))
    length = 10
    rows = []
    for r in rewards:
        row = data.draw(st.lists(st.integers(-1, len(r) - 1), min_size=length, max_size=length))
        rows.append(row)
    turn_index = torch.tensor(rows)
    adv = grpo_multiturn_advantages(turn_index, rewards, groups, credit=credit, score=score)
    scores = torch.stack([trajectory_score(r, score, 0.8) for r in rewards])
    z = grpo_outcome_advantages(scores, groups)
    for b in range(batch):
        generated = turn_index[b] >= 0
        credits = turn_credits(rewards[b], credit, 0.8)
        token_credit = credits[turn_index[b].clamp_min(0)] * generated
        credited = token_credit != 0
        assert (adv[b][~generated] == 0).all()
        if credited.any():
            close(adv[b][credited].mean(), z[b], tol=1e-4)
            # every token pushes in the direction of z, never against it
            assert (adv[b] * z[b] >= 0).all()
            assert adv[b].abs().max() <= credited.sum() * z[b].abs() + 1e-4
        elif generated.any():
            close(adv[b][generated], z[b].expand(int(generated.sum())), tol=1e-5)


def test_multiturn_bad_input():
    ti = torch.tensor([[0, 1]])
    with pytest.raises(ValueError, match="credit=.*equalized, r2g, em"):
        grpo_multiturn_advantages(ti, [[1.0, 0.0]], [0], credit="Equalized")
    with pytest.raises(ValueError, match="score=.*mean, sum, r2g"):
        grpo_multiturn_advantages(ti, [[1.0, 0.0]], [0], score="Sum")
    with pytest.raises(ValueError, match="zero_credit=.*uniform, none"):
        grpo_multiturn_advantages(ti, [[1.0, 0.0]], [0], zero_credit="skip")
    with pytest.raises(ValueError, match="turn_rewards\\[0\\] holds only 1"):
        grpo_multiturn_advantages(ti, [[1.0]], [0])
    with pytest.raises(ValueError, match="turn_rewards has 2"):
        grpo_multiturn_advantages(ti, [[1.0, 0.0], [1.0]], [0])
    with pytest.raises(ValueError, match="turn_index"):
        grpo_multiturn_advantages(torch.tensor([0, 1]), [[1.0, 0.0]], [0])
    with pytest.raises(ValueError, match="turn_index"):
        grpo_multiturn_advantages(torch.tensor([[0, -2]]), [[1.0]], [0])
    with pytest.raises(ValueError, match="group_ids"):
        grpo_multiturn_advantages(ti, [[1.0, 0.0]], [0, 1])


def test_turn_index_from_spans():
    # trajectory 0: prompt 3; turn 0 generated at 3-4, turn 1 at 7  → response [0, 0, −1, −1, 1, −1]
    # trajectory 1: prompt 5; turn 0 at 5-7                          → response [0, 0, 0, −1, −1, −1]
    spans = [[TurnSpan(1, 3, 5), TurnSpan(6, 7, 8)], [TurnSpan(3, 5, 8)]]
    turn_index = turn_index_from_spans(spans, [3, 5], response_length=6)
    assert turn_index.tolist() == [[0, 0, -1, -1, 1, -1], [0, 0, 0, -1, -1, -1]]
    with pytest.raises(ValueError, match=r"turn_spans\[1\]\[0\]"):
        turn_index_from_spans(spans, [3, 6], response_length=6)
    with pytest.raises(ValueError, match="prompt_lens"):
        turn_index_from_spans(spans, [3], response_length=6)


def test_multiturn_output_is_float32():
    adv = grpo_multiturn_advantages(torch.tensor([[0, -1]], dtype=torch.int32), [[1.0]], [0])
    assert adv.dtype == torch.float32


# ---------------------------------------------------------------- FoldGRPO


def test_foldgrpo_counts_each_rollout_once():
    # group g: rollout u1 folded into 3 rows (score 1 each), rollout u2 one row (score 0)
    #   stats over [1, 0]: μ = 0.5, σ = √0.5 → u1 rows (1 − 0.5)/σ, u2 row −0.5/σ
    #   (counting rows instead would give μ = 0.75)
    # group h: v1 rows score 2 then 0 (the first row, 2, is its representative), v2 score 1
    #   stats over [2, 1]: μ = 1.5, σ = √0.5 → rows (2 − 1.5)/σ, (0 − 1.5)/σ, (1 − 1.5)/σ
    # group k: one rollout w1 in two rows → no baseline → advantage 0 (decisions S19); "raw" keeps 3/(1 + ε)
    scores = torch.tensor([1.0, 1.0, 1.0, 0.0, 2.0, 0.0, 1.0, 3.0, 3.0])
    groups = ["g", "g", "g", "g", "h", "h", "h", "k", "k"]
    gen = ["u1", "u1", "u1", "u2", "v1", "v1", "v2", "w1", "w1"]
    mask = torch.ones(9, 2)
    mask[0, 1] = 0
    sigma = math.sqrt(0.5) + EPS
    expected = torch.tensor([0.5, 0.5, 0.5, -0.5, 0.5, -1.5, -0.5, 0.0, 0.0]) / sigma
    expected[7:] = 0.0
    adv = foldgrpo_advantages(scores, groups, gen, mask)
    close(adv, expected[:, None] * mask)
    expected[7:] = 3 / (1 + EPS)
    close(foldgrpo_advantages(scores, groups, gen, mask, singleton="raw"), expected[:, None] * mask)


def test_foldgrpo_with_distinct_rollouts_equals_outcome_grpo():
    scores = torch.tensor([0.2, 0.9, 0.4, 1.0])
    groups = [0, 0, 1, 1]
    mask = torch.ones(4, 3)
    adv = foldgrpo_advantages(scores, groups, torch.arange(4), mask)
    close(adv, grpo_outcome_advantages(scores, groups)[:, None] * mask)


def test_foldgrpo_bad_input():
    with pytest.raises(ValueError, match="gen_uids"):
        foldgrpo_advantages(torch.ones(2), [0, 0], [0], torch.ones(2, 3))
    with pytest.raises(ValueError, match="response_mask"):
        foldgrpo_advantages(torch.ones(2), [0, 0], [0, 1], torch.ones(3, 3))
    with pytest.raises(ValueError, match="singleton"):
        foldgrpo_advantages(torch.ones(2), [0, 0], [0, 1], torch.ones(2, 3), singleton="keep")


def test_turn_advantages_hand_worked():
    # γ = 0.5. Group "a": traj 0 r = [0, 1, 1] → returns G = [0 + .5 + .25, 1 + .5, 1] = [.75, 1.5, 1]
    #                     traj 1 r = [0, 1]    → G = [.5, 1]
    # turn 0: .75 vs .5 → μ = .625, σ = √(2·.125²) → z0 = ±.125/σ ≈ ±.7071; turn 1: 1.5 vs 1 → z1 ≈ ±.7071;
    # turn 2: only traj 0 took it → no baseline → 0. Group "b" has one trajectory → 0 everywhere.
    turn_index = torch.tensor([[0, 0, 1, 1, 2, 2], [0, -1, 1, 1, -1, -1], [0, 1, 2, 3, -1, -1]])
    adv = grpo_turn_advantages(turn_index, [[0, 1, 1], [0, 1], [1, 0, 0, 0]], ["a", "a", "b"], gamma=0.5)
    z0 = 0.125 / (math.sqrt(2 * 0.125**2) + EPS)
    z1 = 0.25 / (math.sqrt(2 * 0.25**2) + EPS)
    close(adv[0], [z0, z0, z1, z1, 0, 0])
    close(adv[1], [-z0, 0, -z1, -z1, 0, 0])
    close(adv[2], torch.zeros(6))


def test_turn_advantages_push_down_the_turn_that_loses_the_reward():
    # The failure mode of r2g credits (decisions A8b): traj 1 answers turn 0 as well as traj 0, then breaks
    # turn 1 (reward 0, episode over). Under r2g credits its broken turn has credit 0 and only its good
    # turn 0 is pushed down; the turn estimator pushes down the broken turn.
    turn_index = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1]])
    rewards, groups = [[0.5, 0.5], [0.5, 0.0]], ["g", "g"]
    credit = grpo_multiturn_advantages(turn_index, rewards, groups)
    assert credit[1, 2:].eq(0).all() and (credit[1, :2] < 0).all()
    turn = grpo_turn_advantages(turn_index, rewards, groups)
    assert (turn[1, 2:] < 0).all() and (turn[0, 2:] > 0).all()
    # turn 0: G = .5 + .8·.5 = .9 vs .5 → traj 1's turn 0 is pushed down too, but by its return, not by a share
    assert (turn[1, :2] < 0).all()


def test_turn_advantages_centre_only_and_validate():
    turn_index = torch.tensor([[0, 1], [0, 1]])
    adv = grpo_turn_advantages(turn_index, [[1.0, 0.0], [0.0, 1.0]], [0, 0], gamma=1.0, norm_by_std=False)
    # G: [1, 0] and [1, 1] → turn 0: equal → 0; turn 1: 0 vs 1 → ∓.5
    close(adv, [[0.0, -0.5], [0.0, 0.5]])
    with pytest.raises(ValueError, match="holds only 1 rewards"):
        grpo_turn_advantages(turn_index, [[1.0], [0.0, 1.0]], [0, 0])
    with pytest.raises(ValueError, match="gamma"):
        grpo_turn_advantages(turn_index, [[1.0, 0.0], [0.0, 1.0]], [0, 0], gamma=1.5)
