"""``mimesis-pl shim``: run a :class:`~mimesis_pl.shim.service.PrivilegedShim` as a process."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from mimesis_pl.llm import api_key
from mimesis_pl.shim.service import PrivilegedShim
from mimesis_pl.shim.store import StoreLimits

_DEFAULTS = StoreLimits()
#: (flag, type, default, help) of the store's and the upstream's limits
_LIMITS: tuple[tuple[str, type, float | int, str], ...] = (
    ("--ttl-s", float, _DEFAULTS.ttl_s, "evict an episode not written for this long"),
    ("--max-episodes", int, _DEFAULTS.max_episodes, "episodes kept, least recently written evicted first"),
    (
        "--max-entries-per-episode",
        int,
        _DEFAULTS.max_entries_per_episode,
        "older entries of a longer episode are dropped; indices stay absolute",
    ),
    ("--max-entry-chars", int, _DEFAULTS.max_entry_chars, "stored reasoning / public text cut to this length"),
    ("--max-total-chars", int, _DEFAULTS.max_total_chars, "characters stored over all episodes before LRU eviction"),
    ("--upstream-timeout-s", float, 300.0, "limit of one upstream call; beyond it the caller gets HTTP 504"),
    ("--max-upstream-connections", int, 256, "pooled connections to the upstream"),
)


def build_parser(prog: str = "mimesis-pl shim") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Privileged-channel shim: proxies OpenAI chat completions to UPSTREAM, returns only "
        "the public text and keeps each reply's <think> reasoning under its episode "
        "(POST /ep/{id}/v1/chat/completions, GET /ep/{id}/privileged, DELETE /ep/{id}, GET /stats).",
    )
    p.add_argument("--upstream", required=True, help="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    p.add_argument("--port", type=int, default=8710, help="bind port; 0 picks a free one (default: 8710)")
    p.add_argument("--token", default=None, help="bearer token required on every route (prefer --token-env)")
    p.add_argument(
        "--token-env",
        default=None,
        metavar="NAME",
        help="read the bearer token from environment variable NAME (keeps it out of `ps`)",
    )
    p.add_argument(
        "--upstream-api-key-env",
        default=None,
        metavar="NAME",
        help="environment variable holding the key sent to the upstream",
    )
    p.add_argument("--model", default=None, help="force this model name into every forwarded request")
    p.add_argument(
        "--reasoning-prefilled",
        choices=("auto", "true", "false"),
        default="auto",
        help="the upstream's replies start inside a pre-filled <think> (true), never (false), or as each "
        "request's chat_template_kwargs.enable_thinking says (auto, the default); an unclosed reply is then "
        "private reasoning, never public text",
    )
    p.add_argument(
        "--no-restore-reasoning",
        action="store_true",
        help="do not give a thinking simulator's earlier turns back their stored reasoning (sent upstream only)",
    )
    for flag, kind, default, text in _LIMITS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default: %(default)s)")
    return p


def _secret(parser: argparse.ArgumentParser, flag: str, name: str | None) -> str | None:
    try:
        return api_key(name, where=flag)
    except ValueError as err:
        parser.error(str(err))


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (without the program/subcommand name), serve until SIGINT/SIGTERM, return 0."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.token and args.token_env:
        parser.error("give --token or --token-env, not both")
    token = args.token or _secret(parser, "--token-env", args.token_env)
    api_key = _secret(parser, "--upstream-api-key-env", args.upstream_api_key_env)
    try:
        limits = StoreLimits(
            ttl_s=args.ttl_s,
            max_episodes=args.max_episodes,
            max_entries_per_episode=args.max_entries_per_episode,
            max_entry_chars=args.max_entry_chars,
            max_total_chars=args.max_total_chars,
        )
        shim = PrivilegedShim(
            args.upstream,
            host=args.host,
            port=args.port,
            token=token,
            limits=limits,
            upstream_api_key=api_key,
            model_override=args.model,
            reasoning_prefilled={"auto": None, "true": True, "false": False}[args.reasoning_prefilled],
            restore_reasoning=not args.no_restore_reasoning,
            upstream_timeout_s=args.upstream_timeout_s,
            max_upstream_connections=args.max_upstream_connections,
        )
    except ValueError as exc:
        parser.error(str(exc))
    try:
        asyncio.run(_serve(shim))
    except (OSError, ValueError) as exc:  # port in use, shim pointed at itself, public bind without a token
        print(f"mimesis-pl shim: error: {exc}", file=sys.stderr)
        return 1
    return 0


async def _serve(shim: PrivilegedShim) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def ready(url: str) -> None:
        # One parseable line: launchers (and tests) wait for it before sending traffic.
        where = shim.bind_url if shim.bind_url == url else f"{shim.bind_url} (connect to {url})"
        print(f"mimesis-pl shim: serving {where} -> {shim.upstream_url}", flush=True)

    await shim.serve_forever(stop, on_ready=ready)


if __name__ == "__main__":
    raise SystemExit(main())
