"""Simulator-RL task tests. pytest's importlib mode does not put test folders on sys.path: this folder is
added for ``task_fixtures``."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
