"""Helpers of the simulator-suite tests: run a config through the CLI, read the item cache and scalars."""

from __future__ import annotations

import json
from pathlib import Path

from mimesis_pl.cli import main


class Killed(Exception):
    """Stands in for the process dying mid-run (not an infrastructure failure: it propagates)."""


def run_suite(config: str, out: Path, runs: Path, *overrides: str) -> None:
    assert (
        main(
            [
                "test",
                "--config",
                config,
                "--model.init_args.out_dir",
                str(out),
                "--trainer.logger.init_args.save_dir",
                str(runs),
                *overrides,
            ]
        )
        == 0
    )


def cache_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scalars(run_dir: Path) -> dict[str, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = run_dir.glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    return {tag: accumulator.Scalars(tag)[-1].value for tag in accumulator.Tags()["scalars"]}


def kill_after(n: int, responder):
    """A responder that raises :class:`Killed` once it has answered ``n`` calls."""
    calls = [0]

    def wrapped(messages, seed, temperature):
        if calls[0] >= n:
            raise Killed("power cut")
        calls[0] += 1
        return responder(messages, seed, temperature)

    return wrapped


def assert_no_scored_item_redone(first: list[dict], second: list[dict]) -> None:
    """Lines appended by the resumed run never repeat an item the killed run had scored."""
    done = {r["digest"] for r in first if r["status"] == "scored"}
    redone = [r["key"]["task_id"] for r in second if r["digest"] in done]
    assert not redone, f"items redone after resume: {redone}"
