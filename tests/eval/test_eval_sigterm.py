"""A SIGTERM during the last evaluation batch is a stopped run, not a success (issue 35, item 14)."""

from __future__ import annotations

from .test_eval_cli import SHORT_TURNS


def test_sigterm_in_the_last_evaluation_batch_exits_143(tmp_path, monkeypatch, capsys):
    """Issue 35 item 14: Lightning finishes the last batch after SIGTERM and returned normally: exit 0."""
    import os
    import signal

    from mimesis_pl.cli import main
    from mimesis_pl.modules.agent_eval import AgentEvalModule

    original = AgentEvalModule.test_step

    def stopped_during(self, batch, batch_idx):
        os.kill(os.getpid(), signal.SIGTERM)  # the config's 10 tasks are one batch: this is the last
        return original(self, batch, batch_idx)

    monkeypatch.setattr(AgentEvalModule, "test_step", stopped_during)
    out = tmp_path / "agent"
    args = ["test", "--config", "configs/tiny/eval_agent.yaml", "--model.init_args.out_dir", str(out)]
    assert main([*args, "--trainer.logger.init_args.save_dir", str(tmp_path / "runs"), *SHORT_TURNS]) == 143
    assert "stopped by SIGTERM in the last batch" in capsys.readouterr().err
    assert len((out / "trials.jsonl").read_text().splitlines()) == 20  # what finished is kept: a rerun resumes
