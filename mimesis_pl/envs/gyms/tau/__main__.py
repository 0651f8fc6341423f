"""Serve a TauGym tool runtime over HTTP: ``python -m mimesis_pl.envs.gyms.tau --kind tau_bench --port 8300``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aiohttp import web

from mimesis_pl.envs.gyms.tau.runtime import RetailRuntime, TauBenchRuntime, TauRuntime, make_tau_app


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a TauGym tool runtime over HTTP.")
    parser.add_argument("--kind", choices=["retail", "tau_bench"], default="retail")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8300)
    args = parser.parse_args(argv)
    runtime: TauRuntime = TauBenchRuntime() if args.kind == "tau_bench" else RetailRuntime()
    web.run_app(make_tau_app(runtime), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
