"""How a run ends when it cannot go on: one-line config errors, services closed on exceptions, SIGTERM."""

from __future__ import annotations

import os
import signal

import lightning.pytorch as pl
import pytest
import torch

from mimesis_pl.cli import MimesisCLI, main
from mimesis_pl.lifecycle import SIGTERM_EXIT_CODE, RunGuard

from .conftest import REPO

CHAT_SFT = str(REPO / "configs" / "tiny" / "chat_sft.yaml")
SIM_RL = str(REPO / "configs" / "tiny" / "simulator_rl.yaml")


def _sft_args(tmp_path, *extra):
    return [
        "fit",
        "--config",
        CHAT_SFT,
        f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
        f"--trainer.default_root_dir={tmp_path}",
        f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
        f"--data.init_args.files=[{REPO / 'assets' / 'data' / 'chat_sft' / 'train.jsonl'}]",
        *extra,
    ]


def test_a_constructor_value_error_is_one_line_not_a_namespace_dump(tmp_path, capsys):
    assert main(_sft_args(tmp_path, "--model.init_args.optim.lr=-1")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["mimesis-pl fit: error: model.init_args.optim.lr must be > 0, got -1.0"]


def test_a_served_judge_without_url_fails_at_construction(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    built = []
    monkeypatch.setattr("mimesis_pl.modules.base.HFCausalLMModule.configure_model", lambda self: built.append(1))
    assert main(["fit", "--config", SIM_RL, "--model.init_args.roles.judge=ServedChatSettings"]) == 2
    assert "judge: ServedChatSettings needs url" in capsys.readouterr().err
    assert built == []  # before any weights load


def test_the_cli_trainer_closes_services_on_exceptions(tmp_path):
    cli = MimesisCLI(args=_sft_args(tmp_path)[1:], run=False)
    assert sum(isinstance(c, RunGuard) for c in cli.trainer.callbacks) == 1


class _Failing(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.torn_down: list[str] = []

    def training_step(self, batch, batch_idx):
        raise RuntimeError("partner down")

    def train_dataloader(self):
        return [torch.zeros(1, 1)]

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def teardown(self, stage: str) -> None:
        self.torn_down.append(stage)


def test_teardown_runs_when_fit_raises(tmp_path):
    module = _Failing()
    trainer = pl.Trainer(
        max_steps=1, logger=False, enable_checkpointing=False, default_root_dir=tmp_path, callbacks=[RunGuard()]
    )
    with pytest.raises(RuntimeError, match="partner down"):
        trainer.fit(module)
    assert module.torn_down == ["fit"]


def test_sigterm_saves_a_checkpoint_and_exits_non_zero(tmp_path, monkeypatch):
    from mimesis_pl.modules import HFExportCallback

    def send_at_step_3(self, trainer, *args):
        if trainer.global_step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(HFExportCallback, "on_train_batch_end", send_at_step_3)
    rc = main(_sft_args(tmp_path, "--trainer.val_check_interval=100", "--trainer.enable_checkpointing=false"))
    assert rc == SIGTERM_EXIT_CODE
    run = next((tmp_path / "runs" / "tiny_chat_sft").iterdir())
    (ckpt,) = (run / "checkpoints").glob("sigterm-step=*.ckpt")
    assert ckpt.name == "sigterm-step=3.ckpt"
    assert torch.load(ckpt, weights_only=False)["global_step"] == 3
    assert not (run / "hf" / "final").exists()  # no export of a run that did not finish


def test_a_failing_eval_run_closes_its_suite(tmp_path, monkeypatch):
    from mimesis_pl.eval.simulator.turing import TuringSuite
    from mimesis_pl.modules.simulator_eval import SimulatorEvalModule

    monkeypatch.chdir(REPO)

    async def down(self, batch, ctx):
        raise RuntimeError("judge server vanished")

    closed = []
    teardown = SimulatorEvalModule.teardown
    monkeypatch.setattr(TuringSuite, "run_batch", down)
    monkeypatch.setattr(
        SimulatorEvalModule, "teardown", lambda self, stage: (closed.append(stage), teardown(self, stage))
    )
    args = ["test", "--config", "configs/tiny/eval_turing.yaml", f"--model.init_args.out_dir={tmp_path / 'out'}"]
    with pytest.raises(RuntimeError, match="judge server vanished"):
        main([*args, f"--trainer.logger.init_args.save_dir={tmp_path}"])
    assert closed == ["test"]
