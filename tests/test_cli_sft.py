"""The tiny SFT job end to end through ``mimesis-pl``: logs, resolved config, HF export, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimesis_pl.cli import main

from .conftest import REPO

CONFIG = str(REPO / "configs" / "tiny" / "chat_sft.yaml")


def fit(tmp_path: Path, *extra: str) -> None:
    main(
        [
            "fit",
            "--config",
            CONFIG,
            f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            f"--trainer.default_root_dir={tmp_path}",
            f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
            f"--data.init_args.files=[{REPO / 'assets' / 'data' / 'chat_sft' / 'train.jsonl'}]",
            *extra,
        ]
    )


def audit(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # the configs name assets/ relative to the repository root


def test_fit_writes_config_logs_and_loadable_hf_export(tmp_path, in_tmp):
    fit(tmp_path)  # the config's 40 steps
    run = next((tmp_path / "runs" / "tiny_chat_sft").iterdir())
    assert (run / "config.yaml").is_file()
    assert "max_steps: 40" in (run / "config.yaml").read_text()
    assert list(run.glob("events.out.tfevents.*"))

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    losses = [e.value for e in events.Scalars("train/loss")]
    assert losses[-1] < 0.5 * losses[0], losses  # the tiny model learns the synthetic patterns
    for tag in ("train/ppl", "train/tokens_per_s", "train/lr", "train/trained_token_fraction", "val/loss", "val/ppl"):
        assert events.Scalars(tag), tag

    from transformers import AutoModelForCausalLM, AutoTokenizer

    export = run / "hf" / "final"
    model = AutoModelForCausalLM.from_pretrained(export)
    tok = AutoTokenizer.from_pretrained(export)
    assert tok.chat_template and "<think>" in tok.chat_template
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "What is 2 plus 3?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**prompt, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > prompt["input_ids"].shape[1]


def test_resume_continues_with_the_same_next_batches(tmp_path, in_tmp):
    straight = tmp_path / "straight.jsonl"
    fit(
        tmp_path / "a",
        "--trainer.max_steps=9",
        f"--trainer.callbacks+={_audit_cb(straight)}",
        "--trainer.val_check_interval=100",
    )
    first = tmp_path / "first.jsonl"
    ckpt_cb = json.dumps(
        {
            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
            "init_args": {"dirpath": str(tmp_path / "ckpt"), "every_n_train_steps": 4, "save_top_k": -1},
        }
    )
    fit(
        tmp_path / "b",
        "--trainer.max_steps=4",
        f"--trainer.callbacks+={_audit_cb(first)}",
        f"--trainer.callbacks+={ckpt_cb}",
        "--trainer.val_check_interval=100",
    )
    ckpt = next((tmp_path / "ckpt").glob("*step=4*.ckpt"))
    second = tmp_path / "second.jsonl"
    fit(
        tmp_path / "c",
        "--trainer.max_steps=9",
        f"--trainer.callbacks+={_audit_cb(second)}",
        "--trainer.val_check_interval=100",
        f"--ckpt_path={ckpt}",
    )
    want = [r["digest"] for r in audit(straight)]
    got = [r["digest"] for r in audit(first)] + [r["digest"] for r in audit(second)]
    assert len(want) == 9
    assert got == want  # no batch lost or repeated, across the epoch boundary too


def _audit_cb(path: Path) -> str:
    return json.dumps({"class_path": "mimesis_pl.data.audit.BatchAuditCallback", "init_args": {"path": str(path)}})


def test_data_show_json_marks_exactly_the_trained_text(capsys, in_repo):
    rc = main(["data", "show", "--config", CONFIG, "--n", "2", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload) == 2
    segments = payload[0]["segments"]
    trained = [s["text"] for s in segments if s["trained"]]
    assert trained and all(t.endswith("<|im_end|>") for t in trained)
    assert "".join(s["text"] for s in segments).startswith("<|im_start|>")
    assert not any("<|im_start|>" in t for t in trained)


def test_data_show_text_uses_brackets_off_terminal(capsys, in_repo):
    assert main(["data", "show", "--config", CONFIG, "--n", "1", "--colour", "never"]) == 0
    out = capsys.readouterr().out
    assert "[[" in out and "<|im_end|>]]" in out


@pytest.mark.parametrize("name", ["simulator_roleswap_sft", "simulator_thoughttrace_sft"])
def test_tiny_simulator_sft_learns(name, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    main(
        [
            "fit",
            "--config",
            str(REPO / "configs" / "tiny" / f"{name}.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_steps=40",
            "--trainer.val_check_interval=40" if "roleswap" in name else "--trainer.log_every_n_steps=5",
        ]
    )
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = next((tmp_path / f"tiny_{name.removeprefix('simulator_')}").iterdir())
    events = EventAccumulator(str(run))
    events.Reload()
    losses = [e.value for e in events.Scalars("train/loss")]
    assert losses[-1] < 0.5 * losses[0], losses
    assert (run / "hf" / "final" / "model.safetensors").is_file()
    counts = {t: events.Scalars(t)[0].value for t in events.Tags()["scalars"] if t.startswith("data/")}
    assert counts["data/train_samples"] > 0
