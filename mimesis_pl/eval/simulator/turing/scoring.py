"""Turing's pure scoring: the generation cleaned as turing-rl does, our penalty flags, one seed's summary."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from mimesis_pl.chat.think import split_think
from mimesis_pl.eval.simulator.suite import mean_or_none
from mimesis_pl.eval.simulator.turing.data import TuringRow
from mimesis_pl.eval.trials import TrialRecord
from mimesis_pl.metrics.turing import TIE

PENALTIES = ("assistant_like", "source_copy", "wrong_role")
_ASSISTANT = re.compile(
    r"\b(as an ai|i'?d be (happy|glad) to|certainly!|here is a detailed|here's a detailed|"
    r"i hope this helps|let me know if you (have|need))",
    re.IGNORECASE,
)
_ROLE = re.compile(r"^\s*\[?(assistant|ai|bot|system|model)\]?\s*:", re.IGNORECASE)
_REASONING = re.compile(r"<reasoning>.*?</reasoning>", re.DOTALL | re.IGNORECASE)


def clean_generation(text: str) -> str:
    """``<think>`` blocks out (the one splitter), then turing-rl's conventions: ``<reasoning>…</reasoning>``
    removed and, when present, only what follows the last ``[HUMAN]:`` kept."""
    public = _REASONING.sub("", split_think(text)[1])
    marker = public.upper().rfind("[HUMAN]:")
    if marker != -1:
        public = public[marker + len("[HUMAN]:") :]
    return public.strip()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def penalties(generated: str, row: TuringRow) -> dict[str, bool]:
    """Our penalty flags: assistant-like phrasing; a copy of the source (the reply is contained in the
    context/history, or ≥ 80% of its word 4-grams are); a role label (the wrong speaker)."""
    words = _norm(generated).split()
    source = f" {_norm(row.context)} {_norm(row.user_history)} "
    grams = [" ".join(words[i : i + 4]) for i in range(len(words) - 3)]
    copied = (len(words) >= 4 and f" {' '.join(words)} " in source) or (
        bool(grams) and sum(f" {g} " in source for g in grams) >= 0.8 * len(grams)
    )
    return {
        "assistant_like": bool(_ASSISTANT.search(generated)),
        "source_copy": copied,
        "wrong_role": bool(_ROLE.match(generated)),
    }


def seed_summary(
    seed: int, records: Sequence[TrialRecord], judge_failed: Counter, generation_failures: int
) -> dict[str, object]:
    """One seed's numbers over its scored ``records`` (``info``: canonical ``rating`` and the penalty flags):
    rating and reward means, tie rate, ground-truth accuracy over the decided ratings, the 1-7 histogram,
    each penalty's share, and the failures counted beside them (never rated)."""
    ratings = [r.info["rating"] for r in records]
    decided = [s for s in ratings if s != TIE]
    out = {
        "seed": seed,
        "n_scored": len(records),
        "judge_failures": sum(judge_failed.values()),
        "judge_failures_by_kind": dict(judge_failed),
        "generation_failures": generation_failures,
        "turing_rating_mean": mean_or_none([float(s) for s in ratings]),
        "turing_reward_mean": mean_or_none([r.reward for r in records]),
        "tie_rate": mean_or_none([float(s == TIE) for s in ratings]),
        "gt_accuracy": mean_or_none([float(s < TIE) for s in decided]),
        "histogram": {str(k): ratings.count(k) for k in range(1, 8)},
    }
    out.update({f"penalty_{p}": mean_or_none([float(r.info[p]) for r in records]) for p in PENALTIES})
    return out
