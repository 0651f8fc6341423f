"""Pure RL math (no Lightning): advantages, policy and CSD losses, teacher rows for CSD."""

from mimesis_pl.rl.advantages import (
    foldgrpo_advantages,
    grpo_multiturn_advantages,
    grpo_outcome_advantages,
    grpo_turn_advantages,
    trajectory_score,
    turn_credits,
    turn_index_from_spans,
)
from mimesis_pl.rl.losses import aggregate_loss, csd_loss, masked_mean, policy_loss, topk_reverse_kl
from mimesis_pl.rl.teacher import (
    PackedTeacherRows,
    TeacherRows,
    build_teacher_rows,
    gather_teacher_logprobs,
    pack_teacher_rows,
    teacher_logits_to_keep,
    token_logprobs_from_logits,
)

__all__ = [
    "PackedTeacherRows",
    "TeacherRows",
    "aggregate_loss",
    "build_teacher_rows",
    "csd_loss",
    "foldgrpo_advantages",
    "gather_teacher_logprobs",
    "grpo_multiturn_advantages",
    "grpo_turn_advantages",
    "grpo_outcome_advantages",
    "masked_mean",
    "pack_teacher_rows",
    "policy_loss",
    "teacher_logits_to_keep",
    "token_logprobs_from_logits",
    "topk_reverse_kl",
    "trajectory_score",
    "turn_credits",
    "turn_index_from_spans",
]
