"""Acceptance checks of a CueGym start (docs/decisions.md A97), exact from logits on the held-out decision contexts.

Reads ``probe/test.jsonl`` (no note), ``probe/test_noted.jsonl`` (a note naming a random aspect) and
``probe/test_coached.jsonl`` (the job coach's note: the true open aspect) written by ``mimesis-pl data make-cuegym``,
and builds an empty-note variant (the note's framing alone). Prints and writes (``--out``) a JSON with:

- ``p_correct_no_note``: P(correct aspect | no note); a cue-blind start is near 0.25;
- ``p_noted_given_note``: P(the noted aspect | a note naming a random aspect); reading by content: >= 0.9;
- ``gap_correct`` / ``gap_wrong``: the raw teacher gap log p_teacher − log p_student at the decision, on the
  correct aspect and on the wrong ones (mean over the wrong ones, and weighted by the student's probability: what
  sampled tokens see); targets >= +1 and <= −2;
- ``gap_empty_note``: the same gap on the correct aspect with an empty note (the framing alone): the null probe.

    python bench/cue_start_checks.py assets/agent-cue-coached --probes assets/data/cuegym/probe --out checks.json
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path

from mimesis_pl.causal_lm import load_causal_lm
from mimesis_pl.chat import load_tokenizer
from mimesis_pl.chat.render import ChatRenderer
from mimesis_pl.csd.prompts import frame_note
from mimesis_pl.eval.probe import probe_decisions, read_probe_contexts


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def teacher_gaps(student: list, teacher: list, correct: list[str]) -> dict[str, float]:
    """Mean raw gaps log p_T − log p_S on the correct candidate and on the wrong ones (plain and p_S-weighted)."""
    on_correct, on_wrong, weighted, weights = [], [], 0.0, 0.0
    for s, t, c in zip(student, teacher, correct, strict=True):
        on_correct.append(t.logp[c] - s.logp[c])
        for name in s.logp:
            if name != c:
                gap = t.logp[name] - s.logp[name]
                on_wrong.append(gap)
                weighted += math.exp(s.logp[name]) * gap
                weights += math.exp(s.logp[name])
    return {"correct": mean(on_correct), "wrong": mean(on_wrong), "wrong_sampled": weighted / weights}


def run_checks(model_dir: str, probes: Path, limit: int | None = None) -> dict[str, float]:
    tokenizer = load_tokenizer(model_dir, None)
    renderer = ChatRenderer(tokenizer)
    model = load_causal_lm(model_dir)
    plain = read_probe_contexts(probes / "test.jsonl")[:limit]
    empty = [replace(r, messages=[*r.messages, {"role": "user", "content": frame_note("")}]) for r in plain]
    got = {
        name: probe_decisions(model, renderer, rows, batch_size=8)
        for name, rows in (
            ("plain", plain),
            ("noted", read_probe_contexts(probes / "test_noted.jsonl")[:limit]),
            ("coached", read_probe_contexts(probes / "test_coached.jsonl")[:limit]),
            ("empty", empty),
        )
    }
    correct = [r.correct for r in plain]
    gaps = teacher_gaps(got["plain"].rows, got["coached"].rows, correct)
    null = teacher_gaps(got["plain"].rows, got["empty"].rows, correct)
    return {
        "contexts": got["plain"].n,
        "p_correct_no_note": got["plain"].p_correct,
        "p_correct_norm_no_note": got["plain"].p_correct_norm,
        "p_noted_given_note": got["noted"].p_correct,
        "p_correct_given_coach_note": got["coached"].p_correct,
        "gap_correct": gaps["correct"],
        "gap_wrong": gaps["wrong"],
        "gap_wrong_sampled": gaps["wrong_sampled"],
        "gap_empty_note_correct": null["correct"],
        "gap_empty_note_wrong": null["wrong"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--probes", default="assets/data/cuegym/probe", help="the probe/ folder of make-cuegym")
    parser.add_argument("--out", default=None, help="write the JSON here too")
    parser.add_argument("--limit", type=int, default=None, help="only the first N contexts of each file")
    args = parser.parse_args(argv)
    result = run_checks(args.model_dir, Path(args.probes), args.limit)
    text = json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
