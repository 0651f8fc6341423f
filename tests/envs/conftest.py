"""Gym tests. pytest's importlib mode does not put test folders on sys.path, so this folder is added
here; its helper module is gym-prefixed (``gym_fixtures``) to avoid clashing with other folders'."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
