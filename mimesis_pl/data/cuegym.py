"""CueGym tasks and probe contexts: ``mimesis-pl data make-cuegym``.

Writes, under ``--out``, UserRL-format parquet splits of :mod:`mimesis_pl.envs.gyms.cue` tasks and the probe
contexts of ``mimesis-pl probe`` / the ``DecisionProbe`` callback:

- ``train/CueGym.parquet`` (``--train``) and ``test/CueGym.parquet`` (``--test``): cues *mapped* to the must-have's
  aspect (one of its two phrasings); test tasks use (item, aspects, values) combinations no training task has.
- ``sft/CueGym.parquet`` (``--sft``): cues drawn at random from all eight phrasings, unrelated to the must-have,
  for expert traces: an agent fine-tuned on them has seen every cue but cannot have learnt what one predicts.
- ``probe/test.jsonl``: every test task's two decision contexts (after the first cue; after the first must-have is
  revealed and the second cued), cut right before the aspect word of "The user cares about the <aspect>";
  ``probe/test_noted.jsonl``: the same contexts with a coach note naming a random aspect (``correct`` is the noted
  one: does the agent read a note by its content?); ``probe/test_coached.jsonl``: the note the job's coach writes
  (the true open aspect): the CSD teacher's context; ``probe/test_explicit.jsonl``: the plain contexts under
  ``cue_mode: explicit`` (the control's probe).

    mimesis-pl data make-cuegym --out assets/data/cuegym --seed 0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..csd.prompts import frame_note
from ..csd.scripted_coach import ASPECT_ADVICE
from ..envs.gyms.cue import ASPECTS, CUES, OPENING, SYSTEM_PROMPT, VALUES, CueMode
from ..envs.tasks import TOOL_NAME_IN_ROWS, GymTask

ITEMS = ("jacket", "bag", "boots", "backpack", "lamp", "chair", "scarf", "tent", "coat", "blanket", "rug", "hat")
PROBE_PREFIX = "<think>\nThe user cares about the"
SPLITS = ("train", "test", "sft")


def _combos(rng: random.Random, k: int) -> Iterator[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Endless random (item, aspects in order, values) combinations."""
    while True:
        aspects = tuple(rng.sample(ASPECTS, k))
        yield rng.choice(ITEMS), aspects, tuple(rng.choice(VALUES[a]) for a in aspects)


def task_row(
    split: str, index: int, item: str, aspects: Sequence[str], values: Sequence[str], cues: Sequence[str], turns: int
) -> dict[str, Any]:
    """One UserRL-format CueGym row (``prompt``, ``reward_model``, ``extra_info.tools_kwargs``)."""
    musts = [{"aspect": a, "value": v, "cue": c} for a, v, c in zip(aspects, values, cues, strict=True)]
    kwargs = {"env_name": "CueGym", "id": f"cue-{split}-{index}", "item": item, "musts": musts, "turns": turns}
    system = SYSTEM_PROMPT.format(item=item, aspects=", ".join(ASPECTS), turns=turns)
    return {
        "data_source": "interact_cue",
        "prompt": [{"role": "system", "content": system}, {"role": "user", "content": OPENING.format(item=item)}],
        "ability": "interaction",
        "reward_model": {**kwargs, "ground_truth": ", ".join(values), "style": "rule"},
        "extra_info": {
            "index": index,
            "split": split,
            "need_tools_kwargs": True,
            "tools_kwargs": {TOOL_NAME_IN_ROWS: {"create_kwargs": kwargs}},
        },
    }


def make_tasks(*, n_train: int, n_test: int, n_sft: int, k: int = 2, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """The three splits; test combinations are new, SFT cues are random phrasings (see the module docstring)."""
    if not 1 <= k <= len(ASPECTS):
        raise ValueError(f"must-haves per task must lie in [1, {len(ASPECTS)}], got {k}")
    rng = random.Random(seed)
    combos = _combos(rng, k)
    test: dict[tuple, None] = {}
    while len(test) < n_test:
        test.setdefault(next(combos))
    out: dict[str, list[dict[str, Any]]] = {"test": [], "train": [], "sft": []}
    phrasings = [c for pair in CUES.values() for c in pair]
    for i, (item, aspects, values) in enumerate(test):
        out["test"].append(task_row("test", i, item, aspects, values, [rng.choice(CUES[a]) for a in aspects], k + 2))
    for split, n in (("train", n_train), ("sft", n_sft)):
        while len(out[split]) < n:
            item, aspects, values = next(combos)
            if (item, aspects, values) in test:
                continue
            cues = [rng.choice(CUES[a]) for a in aspects] if split == "train" else rng.sample(phrasings, k)
            out[split].append(task_row(split, len(out[split]), item, aspects, values, cues, k + 2))
    return out


def probe_contexts(
    tasks: Sequence[GymTask], *, seed: int = 0, cue_mode: CueMode = "implicit"
) -> dict[str, list[dict[str, Any]]]:
    """The decision contexts of ``tasks`` as probe rows: plain, with a random aspect noted, with the coach's note
    (the replies as the gym gives them under ``cue_mode``)."""
    from ..envs.gyms.cue import read_musts
    from .expert_traces import record_expert_traces

    options = {"CueGym": {"cue_mode": cue_mode}}
    records, _ = asyncio.run(
        record_expert_traces(tasks, max_turns=len(ASPECTS) + 8, min_score=0.0, gym_options=options)
    )
    by_id = {t.key: t for t in tasks}
    rng = random.Random(seed)
    out: dict[str, list[dict[str, Any]]] = {"test": [], "test_noted": [], "test_coached": []}
    for record in records:
        task = by_id[record["sample_id"].split("/", 1)[1]]
        musts = read_musts(task.hidden, where=task.source)
        assistant = [i for i, m in enumerate(record["messages"]) if m["role"] == "assistant"]
        for decision, at in enumerate(assistant[1 : 1 + len(musts)]):
            base = {
                "id": f"{task.key}/{decision + 1}",
                "tools": record["tools"],
                "prefix": PROBE_PREFIX,
                "candidates": {a: f" {a}" for a in ASPECTS},
            }
            context = record["messages"][:at]
            true = musts[decision].aspect
            noted = rng.choice(ASPECTS)
            out["test"].append({**base, "messages": context, "correct": true})
            for name, aspect in (("test_noted", noted), ("test_coached", true)):
                note = {"role": "user", "content": frame_note(ASPECT_ADVICE["ask"].format(aspect=aspect))}
                out[name].append({**base, "messages": [*context, note], "correct": aspect})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mimesis-pl data make-cuegym", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder to write train/, test/, sft/ and probe/ into")
    parser.add_argument("--train", type=int, default=378, help="training tasks (cues mapped to the aspect)")
    parser.add_argument("--test", type=int, default=42, help="held-out tasks with unseen combinations")
    parser.add_argument("--sft", type=int, default=2000, help="tasks with random cues, for expert traces")
    parser.add_argument("--musts", type=int, default=2, help="must-haves per task (K); the turn budget is K + 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--overwrite", action="store_true", help="replace files that exist")
    args = parser.parse_args(argv)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..envs import read_gym_tasks

    out = Path(args.out)
    probe_files = ("test", "test_noted", "test_coached", "test_explicit")
    targets = [out / s / "CueGym.parquet" for s in SPLITS] + [out / "probe" / f"{n}.jsonl" for n in probe_files]
    existing = [str(p) for p in targets if p.exists()]
    if existing and not args.overwrite:
        parser.error(f"{', '.join(existing)} exist; pass --overwrite to replace them, or choose another --out")
    splits = make_tasks(n_train=args.train, n_test=args.test, n_sft=args.sft, k=args.musts, seed=args.seed)
    for split, rows in splits.items():
        path = out / split / "CueGym.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
        print(f"wrote {path}: {len(rows)} tasks")
    test = read_gym_tasks(out / "test" / "CueGym.parquet")
    probes = probe_contexts(test, seed=args.seed)
    probes["test_explicit"] = probe_contexts(test, seed=args.seed, cue_mode="explicit")["test"]
    for name, rows in probes.items():
        path = out / "probe" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {path}: {len(rows)} decision contexts")
    return 0
