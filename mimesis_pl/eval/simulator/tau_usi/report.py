"""tau-USI report: the summary over human batches and ``results.md`` (batch table, published table), built from
the suite's ``results`` so that a report can be rewritten from a ``results.json``."""

from __future__ import annotations

from mimesis_pl.eval.simulator.suite import fmt, pm
from mimesis_pl.eval.simulator.tau_usi.data import TAU_USI, TAU_USI_HUMAN
from mimesis_pl.eval.simulator.tau_usi.scoring import mean_pstd
from mimesis_pl.eval.tables import markdown_table

METRICS = ("D1", "D2", "D3", "D4", "ece", "eval", "usi5", "usi6", "sim_success", "human_success")

BATCH_HEAD = [
    "batch",
    "tasks",
    "D1",
    "D2",
    "D3",
    "D4",
    "ECE↓",
    "Eval",
    "USI₅",
    "USI₆",
    "sim success",
    "human success",
]


def batches_summary(batches: dict[int, dict], evaluation: dict | None) -> dict[str, dict]:
    """Mean ± population std of every metric over the batches with a task; Eval, one score for the model, takes
    its spread over the per-batch Evals instead."""
    scored = [v for v in batches.values() if v["tasks"]]
    summary = {k: mean_pstd([v[k] for v in scored]) for k in METRICS}
    if evaluation is not None:
        summary["eval"] = {k: evaluation[k] for k in ("mean", "std", "n")}
    return summary


def batch_cells(batch: str, v: dict) -> list[str]:
    """One human batch's line of the table."""
    return [
        batch,
        str(v["tasks"]),
        *[fmt(v.get(k), 2) for k in ("D1", "D2", "D3", "D4")],
        fmt(v.get("ece"), 3),
        fmt(v.get("eval_batch"), 2),
        fmt(v.get("usi5"), 2),
        fmt(v.get("usi6"), 2),
        fmt(v.get("sim_success"), 2),
        fmt(v.get("human_success"), 2),
    ]


def summary_cells(summary: dict) -> list[str]:
    """The table's last line: mean ± std over batches."""
    return [
        "mean ± std",
        "",
        *[pm(summary[k], "std", 2) for k in ("D1", "D2", "D3", "D4")],
        pm(summary["ece"], "std", 3),
        pm(summary["eval"], "std", 2),
        pm(summary["usi5"], "std", 2),
        pm(summary["usi6"], "std", 2),
        pm(summary["sim_success"], "std", 2),
        pm(summary["human_success"], "std", 2),
    ]


def tau_usi_markdown(results: dict) -> str:
    """``results.md`` from the suite's ``results``: the batch table, the counts and reading notes, the published
    USI₅ table."""
    rows = [batch_cells(b, v) for b, v in results["batches"].items()] + [summary_cells(results["summary"])]
    published = [
        [name, *[fmt(x, 3 if i == 4 else 2) for i, x in enumerate(values)]] for name, values in TAU_USI.items()
    ]
    models = results["models"]
    return (
        f"# tau-USI: {models['simulator']['name']} with agent {models['agent']['name']}\n\n"
        + markdown_table(BATCH_HEAD, rows)
        + f"\nRollouts scored {results['rollouts_scored']}, unscored {results['rollouts_unscored']} "
        f"{results['unscored_by_kind'] or ''} "
        "(left out of the rows). USI₅ = mean(D1..D4, 100·(1−ECE)); USI₆ adds the model's one Eval (its mean, "
        "the same in every batch; the Eval column shows each batch's own score). ± is the population std "
        "over batches, as the paper's. Comparable with the paper's USI₅ only with the real human file, the frozen "
        "difficulty map and the real tool runtime; the scripted runtime and made-up tasks are not.\n\n"
        f"## Published (the paper, USI₅; humans {TAU_USI_HUMAN})\n\n"
        + markdown_table(["model", "D1", "D2", "D3", "D4", "ECE↓", "USI₅"], published)
    )
