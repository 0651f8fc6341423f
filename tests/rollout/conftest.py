"""Rollout tests; this folder goes on sys.path for ``rollout_fixtures`` (pytest importlib mode)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
