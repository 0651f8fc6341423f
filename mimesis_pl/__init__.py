"""mimesis-pl: user simulators and the agents that learn from them, on PyTorch Lightning."""

import sys as _sys

from mimesis_pl.moved import MovedModules as _MovedModules

__version__ = "0.1.0"

if not any(isinstance(f, _MovedModules) for f in _sys.meta_path):
    _sys.meta_path.append(_MovedModules())  # after every real finder: it only answers for removed paths
