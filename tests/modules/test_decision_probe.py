"""``DecisionProbe`` in a real tiny agent-GRPO ``mimesis-pl fit``: step 0 and every update, TensorBoard and
``probe.jsonl``, and a resume into the same run folder that writes no step twice."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.modules.decision_probe import DecisionProbe, keep_lines_up_to, steps_written

from ..conftest import REPO
from ..eval.test_probe import context_rows, write_rows

CONFIG = str(REPO / "configs" / "tiny" / "agent_grpo.yaml")


def _fit(save_dir, contexts, *extra: str) -> int:
    from mimesis_pl.cli import main

    probe = {"class_path": "mimesis_pl.modules.decision_probe.DecisionProbe", "init_args": {"contexts": contexts}}
    return main(
        [
            "fit",
            "--config",
            CONFIG,
            "--model.init_args.rollout.max_new_tokens=8",
            "--model.init_args.rollout.n_samples=2",
            "--model.init_args.validation=null",
            # the tiny policy earns no reward in 2 steps, so the gradient is 0: decoupled weight decay moves it
            "--model.init_args.optim.lr=0.1",
            "--model.init_args.optim.weight_decay=0.5",
            f"--trainer.logger.init_args.save_dir={save_dir}",
            "--trainer.logger.init_args.version=0",
            f"--trainer.callbacks+={json.dumps(probe)}",
            *extra,
        ]
    )


def test_probe_runs_at_step_0_and_after_each_update_and_a_resume_writes_no_step_twice(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    contexts = write_rows(tmp_path / "contexts.jsonl", context_rows())
    every_step = json.dumps(
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(tmp_path / "ckpt"), "every_n_train_steps": 1, "save_top_k": -1},
        }
    )
    assert _fit(tmp_path / "runs", contexts, "--trainer.max_steps=2", f"--trainer.callbacks+={every_step}") == 0
    run = tmp_path / "runs" / "tiny_agent_grpo" / "version_0"
    lines = [json.loads(line) for line in (run / "probe.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2]
    assert all(line["n"] == 2 and set(line["p_correct_by_row"]) == {"cue-test-1/1", "cue-test-2/0"} for line in lines)
    assert all(0 < line["p_correct"] < line["p_correct_norm"] <= 1 for line in lines)
    assert lines[0]["p_correct"] != lines[1]["p_correct"] != lines[2]["p_correct"]  # it probes the updated policy

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    for tag in ("probe/p_correct", "probe/p_correct_norm", "time/probe_s"):
        logged = {e.step: e.value for e in events.Scalars(tag)}
        assert sorted(logged) == [0, 1, 2], tag
    assert [e.value for e in events.Scalars("probe/p_correct")] == pytest.approx([x["p_correct"] for x in lines])

    # Resumed from step 1 into the same folder: step 2's line is dropped and written again, nothing else twice.
    (ckpt,) = (tmp_path / "ckpt").glob("*step=1*.ckpt")
    assert _fit(tmp_path / "runs", contexts, "--trainer.max_steps=2", f"--ckpt_path={ckpt}") == 0
    again = [json.loads(line) for line in (run / "probe.jsonl").read_text().splitlines()]
    assert [line["step"] for line in again] == [0, 1, 2]
    assert again[:2] == lines[:2] and again[2]["p_correct"] == pytest.approx(lines[2]["p_correct"], rel=1e-4)


def test_resume_keeps_the_lines_up_to_its_step(tmp_path):
    path = tmp_path / "probe.jsonl"
    path.write_text("".join(json.dumps({"step": s, "p_correct": 0.1 * s}) + "\n" for s in (0, 2, 4, 6)))
    keep_lines_up_to(path, 4)
    assert steps_written(path) == {0, 2, 4}
    keep_lines_up_to(tmp_path / "absent.jsonl", 3)  # nothing written yet: nothing to do
    assert steps_written(tmp_path / "absent.jsonl") == set()


def test_bad_settings_and_a_bad_contexts_file_fail_when_the_callback_is_made(tmp_path):
    contexts = write_rows(tmp_path / "c.jsonl", context_rows())
    with pytest.raises(ValueError, match="every_n_steps must be >= 1"):
        DecisionProbe(contexts, every_n_steps=0)
    with pytest.raises(ValueError, match="name must be"):
        DecisionProbe(contexts, name="a/b")
    bad = write_rows(tmp_path / "bad.jsonl", [{**context_rows()[0], "candidates": {}}])
    with pytest.raises(ValueError, match="bad.jsonl:1: field 'candidates' is empty"):
        DecisionProbe(bad)


def test_it_probes_when_the_update_count_passes_a_multiple_of_every_n_steps(tmp_path, monkeypatch):
    from types import SimpleNamespace

    probe = DecisionProbe(write_rows(tmp_path / "c.jsonl", context_rows()), every_n_steps=2)
    probed: list[int] = []
    monkeypatch.setattr(DecisionProbe, "probe", lambda self, trainer, module: probed.append(trainer.global_step))
    trainer = SimpleNamespace(
        global_step=0,
        is_global_zero=True,
        log_dir=str(tmp_path),
        default_root_dir=str(tmp_path),
        strategy=SimpleNamespace(broadcast=lambda value: value),
    )
    probe.on_train_start(trainer, None)
    for step in (1, 2, 3, 5, 7, 8):  # one update a batch, then two (3 → 5 passes 4, 5 → 7 passes 6), then one
        trainer.global_step = step
        probe.on_train_batch_end(trainer, None, None, None, 0)
    assert probed == [0, 2, 5, 7, 8]
