"""CSD coach tests. pytest's importlib mode does not put test folders on sys.path: this folder is added
for ``csd_fixtures``, and ``tests/rollout`` for the scripted engine the shim test drives the loop with."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "rollout"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
