"""Shared helpers for the eval tests.

With ``--import-mode=importlib`` pytest does not put test folders on sys.path, so this folder is added
here; its helper modules are prefixed (``replay_*``, ``eval_*``) to avoid clashing with other folders'.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[2]
REPLAY_ASSETS = REPO / "assets" / "replay"


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests name the shipped sample cases by their repository path.
    monkeypatch.chdir(REPO)
