"""Fixtures for the shim tests: a scripted upstream and shims on loopback, each on its own loop thread."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from mimesis_pl.shim import PrivilegedShim, ServerThread

# The tests import the scripted upstream by module name; with --import-mode=importlib pytest does not
# put test folders on sys.path, so this folder is added here (its module names are shim-prefixed).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shim_scripted_upstream import ScriptedUpstream  # noqa: E402


@pytest.fixture(scope="module")
def upstream() -> Iterator[ServerThread]:
    with ServerThread(ScriptedUpstream(), name="scripted-upstream", timeout_s=10.0) as thread:
        yield thread


@pytest.fixture
def make_shim(upstream: ServerThread) -> Iterator[Callable[..., ServerThread]]:
    """Start a shim in front of the scripted upstream (or another URL); all are stopped at teardown."""
    started: list[ServerThread] = []

    def make(upstream_url: str | None = None, **kwargs: Any) -> ServerThread:
        kwargs.setdefault("shutdown_timeout_s", 1.0)
        thread = ServerThread(PrivilegedShim(upstream_url or upstream.base_url, **kwargs), timeout_s=10.0)
        thread.start()
        started.append(thread)
        return thread

    yield make
    for thread in started:
        thread.stop()


def openai_client(base_url: str, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 10.0)
    kwargs.setdefault("api_key", "EMPTY")
    return openai.OpenAI(base_url=base_url, **kwargs)


@pytest.fixture
def client_for() -> Callable[..., openai.OpenAI]:
    return openai_client
