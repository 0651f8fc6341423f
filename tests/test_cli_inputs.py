"""What a new user types wrong: a YAML syntax error names its file; `data show` takes --n after an override
(issue 35, items 16 and 17)."""

from __future__ import annotations

import json

from mimesis_pl.cli import main

from .conftest import REPO

CHAT_SFT = str(REPO / "configs" / "tiny" / "chat_sft.yaml")


def test_a_yaml_syntax_error_names_the_file_and_the_place(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer:\n  max_steps: [1\nmodel: x\n")
    assert main(["fit", "--config", CHAT_SFT, f"--config={bad}"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"mimesis-pl fit: error: {bad}:3:6: invalid YAML (")


def test_data_show_takes_its_own_flags_after_an_override(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    argv = ["data", "show", "--config", CHAT_SFT, "--data.init_args.batch_size", "2", "--n", "1", "--json"]
    assert main(argv) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_data_commands_report_missing_and_corrupt_inputs_in_one_line(tmp_path, capsys):
    """Issue 35 item 18: tracebacks with exit 1."""
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_text("not parquet")
    for command in ("prepare-gyms", "record-experts"):
        for src in (tmp_path / "none.parquet", corrupt):
            assert main(["data", command, "--src", str(src), "--out", str(tmp_path / "out")]) == 2
            (line,) = capsys.readouterr().err.strip().splitlines()
            assert line.startswith(f"mimesis-pl data {command}: error: ") and str(src) in line, line


def test_a_set_up_error_after_construction_is_one_line_exit_2_and_leaves_no_run_folder(tmp_path, capsys):
    """Issue 35 item 9: a data file missing at set-up printed a traceback (exit 1) and left an empty run folder."""
    runs = tmp_path / "runs"
    argv = [
        "fit",
        "--config",
        CHAT_SFT,
        f"--trainer.logger.init_args.save_dir={runs}",
        f"--model.init_args.model_path={REPO / 'assets' / 'tiny-qwen3'}",
        f"--data.init_args.files=[{tmp_path / 'none.jsonl'}]",
    ]
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if "error" in line]
    assert lines == [f"mimesis-pl fit: error: FileNotFoundError: no file matches '{tmp_path / 'none.jsonl'}'"]
    assert not runs.exists()
