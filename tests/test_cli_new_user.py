"""What a new user runs into with ``mimesis-pl``: their files kept, stacked configs, fast clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mimesis_pl.cli import main
from mimesis_pl.config_save import MARKER

from .conftest import REPO

CHAT_SFT = REPO / "configs" / "tiny" / "chat_sft.yaml"
TRAIN_JSONL = REPO / "assets" / "data" / "chat_sft" / "train.jsonl"


def _no_step(config: Path, *extra: str) -> None:
    """Set-up only (config saving happens there), no optimiser step."""
    main(
        [
            "fit",
            "--config",
            str(config),
            "--trainer.logger",
            "false",
            "--trainer.max_steps",
            "0",
            f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
            f"--data.init_args.files=[{TRAIN_JSONL}]",
            *extra,
        ]
    )


def test_fit_without_logger_keeps_the_users_config_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(CHAT_SFT, tmp_path / "config.yaml")
    before = (tmp_path / "config.yaml").read_bytes()
    _no_step(tmp_path / "config.yaml")
    assert (tmp_path / "config.yaml").read_bytes() == before


def test_fit_without_logger_rewrites_the_config_it_wrote_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(f"{MARKER}\nseed_everything: 99\n")  # an earlier run's
    _no_step(CHAT_SFT)
    written = (tmp_path / "config.yaml").read_text()
    assert written.startswith(MARKER) and "max_steps: 0" in written and "seed_everything: 0" in written


def _long_and_short_jsonl(tmp_path: Path) -> Path:
    import json

    rows = [
        {"messages": [{"role": "user", "content": "Say a lot."}, {"role": "assistant", "content": "word " * 1500}]},
        {"messages": [{"role": "user", "content": "Say a little."}, {"role": "assistant", "content": "Fine."}]},
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("with_class_path", [True, False])
def test_data_show_merges_stacked_configs_like_fit(tmp_path, monkeypatch, capsys, with_class_path):
    """A second config's ``data:`` section overrides keys of the first, it does not replace the section."""
    import json

    monkeypatch.chdir(REPO)  # the config names assets/ relative to the repository root
    head = "  class_path: mimesis_pl.data.chat_sft.JsonlChatSFTDataModule\n" if with_class_path else ""
    second = tmp_path / "my_data.yaml"
    second.write_text(
        f"data:\n{head}  init_args:\n    files: [{_long_and_short_jsonl(tmp_path)}]\n    val_fraction: 0.0\n"
    )
    assert main(["data", "show", "--config", str(CHAT_SFT), "--config", str(second), "--n", "5", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["sample_id"].rsplit(":", 1)[1] for s in shown] == [
        "2"
    ]  # line 1 (~4.5k tokens) is over the first file's 1024 limit, not over the defaults


def test_help_lists_the_helper_commands_and_no_predict(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for helper in ("mimesis-pl data", "mimesis-pl assets", "mimesis-pl shim", "mimesis-pl serve", "mimesis-pl probe"):
        assert helper in out
    assert "{fit,validate,test}" in out  # no module implements predict_step, so it is not offered
    with pytest.raises(SystemExit) as info:
        main(["predict", "--config", str(CHAT_SFT)])
    assert info.value.code != 0 and "invalid choice: 'predict'" in capsys.readouterr().err
