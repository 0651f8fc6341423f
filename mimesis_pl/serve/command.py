"""``mimesis-pl serve MODEL_DIR``: an OpenAI-compatible server over an export, on our HF engine or vLLM.

    mimesis-pl serve runs/<job>/version_0/hf/final --port 8000 --enable-thinking true
    mimesis-pl serve runs/<job>/version_0/hf/final --engine vllm --dry-run   # print vLLM's command

``--engine hf`` (the default) serves with the package's own engine on CPU or CUDA; ``--engine vllm``
runs vLLM's server as a module with the export's template, tool-call and reasoning parsers, thinking
mode and served name (:func:`mimesis_pl.chat.serving.vllm_serve_command`). SIGTERM or SIGINT lets
in-flight requests finish, then exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import sys

from ..chat.serving import vllm_serve_command
from .settings import DEVICES, DTYPES, ServeSettings


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mimesis-pl serve", description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir", help="an exported HF folder (e.g. runs/<job>/version_0/hf/final)")
    p.add_argument("--port", type=int, default=8000, help="bind port; 0 picks a free one (default: 8000)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    p.add_argument("--served-model-name", default=None, help="default: the folder name (<job>-final for hf/final)")
    p.add_argument(
        "--chat-template", default=None, help="a shipped template name or .jinja path (default: the export's)"
    )
    p.add_argument(
        "--enable-thinking", choices=["true", "false"], default=None, help="the default enable_thinking of requests"
    )
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--dtype", choices=DTYPES, default="auto")
    p.add_argument("--max-batch-size", type=int, default=32, help="most sequences per generate call (default: 32)")
    p.add_argument(
        "--batch-wait-ms",
        type=float,
        default=10.0,
        help="an idle engine's wait for requests to batch with (default: 10)",
    )
    p.add_argument("--max-model-len", type=int, default=None, help="default: the config's max_position_embeddings")
    p.add_argument("--token-env", default=None, metavar="NAME", help="environment variable holding the bearer token")
    p.add_argument("--seed", type=int, default=0, help="seeds the draw of seeds for requests without one")
    p.add_argument("--engine", choices=["hf", "vllm"], default="hf", help="our HF engine (default) or vLLM")
    p.add_argument("--dry-run", action="store_true", help="print what would be served (vLLM: its command) and exit")
    return p


def settings_from_args(args: argparse.Namespace) -> ServeSettings:
    return ServeSettings(
        model_dir=args.model_dir,
        served_model_name=args.served_model_name,
        host=args.host,
        port=args.port,
        chat_template=args.chat_template,
        enable_thinking=None if args.enable_thinking is None else args.enable_thinking == "true",
        device=args.device,
        dtype=args.dtype,
        max_batch_size=args.max_batch_size,
        batch_wait_ms=args.batch_wait_ms,
        max_model_len=args.max_model_len,
        token_env=args.token_env,
        seed=args.seed,
    )


def vllm_command(settings: ServeSettings) -> list[str]:
    """vLLM's server for ``settings``: template, parsers, thinking mode, served name, dtype, batch and length."""
    extra = ["--max-num-seqs", str(settings.max_batch_size), "--seed", str(settings.seed)]
    if settings.dtype != "auto":
        extra += ["--dtype", settings.dtype]
    if settings.max_model_len is not None:
        extra += ["--max-model-len", str(settings.max_model_len)]
    return vllm_serve_command(
        settings.model_dir,
        port=settings.port,
        host=settings.host,
        served_model_name=settings.model_name,
        chat_template=settings.chat_template,
        reasoning_parser="auto",
        enable_thinking=settings.enable_thinking,
        extra=extra,
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
        if args.engine == "vllm":
            return _exec_vllm(settings, dry_run=args.dry_run)
        if args.dry_run:
            print(f"mimesis-pl serve: would serve {settings.model_dir} as {settings.model_name} on {settings.host}")
            return 0
        from .server import ModelServer

        server = ModelServer(settings)
        asyncio.run(_serve(server))
    except (OSError, ValueError) as err:  # a bad folder or setting, a port in use, a public bind without a token
        print(f"mimesis-pl serve: error: {err}", file=sys.stderr)
        return 2 if isinstance(err, ValueError) else 1
    return 0


def _exec_vllm(settings: ServeSettings, *, dry_run: bool) -> int:
    command = vllm_command(settings)
    if dry_run:
        print(shlex.join(command))
        return 0
    env = dict(os.environ)
    if settings.token_env:  # vLLM reads its key from VLLM_API_KEY: the token never shows in `ps`
        env["VLLM_API_KEY"] = env.get(settings.token_env) or ""
        if not env["VLLM_API_KEY"]:
            raise ValueError(f"--token-env names {settings.token_env!r}, but it is not set or empty")
    os.execvpe(command[0], command, env)  # replaces this process: signals reach vLLM directly
    return 0  # pragma: no cover


async def _serve(server) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def ready(url: str) -> None:
        # One parseable line: launchers (and tests) wait for it before sending traffic.
        served = server.served
        print(f"mimesis-pl serve: serving {served.model_name} ({served.revision}) on {url}", flush=True)

    await server.serve_forever(stop, on_ready=ready)
    print("mimesis-pl serve: stopped", flush=True)
