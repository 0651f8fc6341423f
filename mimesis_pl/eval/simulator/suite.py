"""What the simulator-fidelity suites share: run identities, cached item runs, statistics, report files.

Items run through the agent evaluation's trial runner and cache (:mod:`mimesis_pl.eval.trials`): one
item is one trial, keyed by the suite's full identity — the simulator and its revision (``model_under_test`` /
``model_revision``), the partner models (``partner``: judge, assistant, …), the suite version
(``harness_version``), the item id with its seed (``task_id``) and a hash of every setting that can
change its result (``gym_config_hash``). A killed run resumes from the cache; an item that keeps failing
for infrastructure reasons is stored unscored, counted, and re-run by the next run.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.io import write_json_atomic, write_text_atomic
from mimesis_pl.eval.simulator.models import SuiteModel
from mimesis_pl.eval.tables import markdown_table
from mimesis_pl.eval.trials import (
    RunIdentity,
    TaskRef,
    TrialCache,
    TrialFn,
    TrialRecord,
    config_hash,
    content_hash,
    run_trials,
)
from mimesis_pl.eval.trials.keys import plain

log = logging.getLogger(__name__)

# The suites' old table writer, now the evaluation's one (:func:`mimesis_pl.eval.tables.markdown_table`).
table = markdown_table


def suite_identity(suite: str, version: str, simulator: SuiteModel, partners: Mapping[str, SuiteModel]) -> RunIdentity:
    """The identity of one suite run: the simulator under test, its partners by role, the suite version."""
    partner = ";".join(f"{role}={m.name}@{m.revision}" for role, m in sorted(partners.items())) or "none"
    return RunIdentity(
        model_under_test=simulator.name,
        model_revision=simulator.revision,
        partner=partner,
        harness_version=f"{suite}-v{version}",
    )


def item_ref(
    stage: str, item_id: str, seed: int | None, settings_hash: str, payload: Any = None, *, content: Any
) -> TaskRef:
    """One cached item: ``stage`` (e.g. ``turing/score``), ``item_id#seed<N>``, keyed by a hash of ``content``
    too (what the item's result depends on: the row, task or case; E10)."""
    task_id = item_id if seed is None else f"{item_id}#seed{seed}"
    return TaskRef(
        gym=stage, task_id=task_id, gym_config_hash=settings_hash, payload=payload, content_hash=content_hash(content)
    )


@dataclass(frozen=True)
class ItemRun:
    """The latest record of every requested item (cached or new) and what this call did."""

    records: dict[str, TrialRecord]  # by task_id
    ran: int
    reused: int


async def run_items(
    refs: Sequence[TaskRef],
    identity: RunIdentity,
    fn: TrialFn,
    cache: TrialCache,
    retry: RetryPolicy,
    max_concurrency: int,
) -> ItemRun:
    """Run the items of ``refs`` the cache does not hold as scored; return cached and new records merged."""
    if not refs:
        return ItemRun({}, 0, 0)
    report = await run_trials(refs, 1, identity, fn, cache, retry, max_concurrency=max_concurrency)
    records = {}
    for ref in refs:
        record = cache.get(ref.key(identity, 0))
        if record is not None:
            records[ref.task_id] = record
    return ItemRun(records, len(report.ran), report.reused)


def mean_or_none(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def mean_sem(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean ± standard error of the mean (sample std / √n) over seeds; ``sem`` None for n < 2."""
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return {"mean": None, "sem": None, "n": 0}
    sem = statistics.stdev(kept) / math.sqrt(len(kept)) if len(kept) > 1 else None
    return {"mean": math.fsum(kept) / len(kept), "sem": sem, "n": len(kept)}


def mean_std(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean ± sample std (n − 1) — e.g. tau-USI over human batches; ``std`` None for n < 2."""
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return {"mean": None, "std": None, "n": 0}
    return {
        "mean": math.fsum(kept) / len(kept),
        "std": statistics.stdev(kept) if len(kept) > 1 else None,
        "n": len(kept),
    }


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def pm(stat: Mapping[str, Any], spread: str = "sem", digits: int = 1) -> str:
    """``mean ± spread`` of a :func:`mean_sem` / :func:`mean_std` entry."""
    if stat.get("mean") is None:
        return "—"
    if stat.get(spread) is None:
        return fmt(stat["mean"], digits)
    return f"{fmt(stat['mean'], digits)} ± {fmt(stat[spread], digits)}"


def json_safe(value: Any) -> Any:
    """NaN/inf become None (``results.json`` is strict JSON; a NaN summary is never written)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def suite_settings(suite: object) -> dict[str, Any]:
    """A suite's public settings (its constructor arguments as stored: models, roles, seeds, limits), as JSON."""
    public = {k: v for k, v in vars(suite).items() if not k.startswith("_")}
    return json.loads(json.dumps(plain(public), sort_keys=True, default=_settings_value))


def _settings_value(value: Any) -> Any:
    # Paths as written; any other object by its type only (a repr with an address would change every run).
    return str(value) if isinstance(value, Path) else f"<{type(value).__name__}>"


def write_suite_files(
    out_dir: Path, results: Mapping[str, Any], markdown: str, settings: Mapping[str, Any] | None = None
) -> tuple[Path, Path]:
    """``results.json`` / ``results.md`` (the latest run) and, per settings hash, ``results-<hash>.json`` /
    ``.md``, which a run with other settings never overwrites (E12). Both name the settings they came from."""
    settings = dict(settings or {})
    digest = config_hash(settings)
    named = {**results, "settings_hash": digest, "settings": settings}
    latest = out_dir / "results.json"
    if latest.exists():
        try:
            previous = json.loads(latest.read_text(encoding="utf-8")).get("settings_hash")
        except (json.JSONDecodeError, AttributeError):
            previous = None
        if previous != digest:
            log.warning(
                "%s: replacing the report of settings %s with settings %s; the earlier one stays as %s",
                latest,
                previous or "(unnamed)",
                digest,
                f"results-{previous}.json" if previous else "nothing (it named no settings)",
            )
    header = f"<!-- settings {digest}: see results-{digest}.json for the settings -->\n"
    write_json_atomic(out_dir / f"results-{digest}.json", json_safe(named))
    write_text_atomic(out_dir / f"results-{digest}.md", header + markdown)
    return (
        write_json_atomic(latest, json_safe(named)),
        write_text_atomic(out_dir / "results.md", header + markdown),
    )


def flat_scalars(prefix: str, values: Mapping[str, Any]) -> dict[str, float]:
    """``{prefix/key: float}`` of the finite numbers in ``values`` (nested mappings joined by ``/``)."""
    out: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            out.update(flat_scalars(f"{prefix}/{key}", value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[f"{prefix}/{key}"] = float(value)
    return out
