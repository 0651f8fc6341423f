"""mimesis-pl: user simulators and the agents that learn from them, on PyTorch Lightning."""

__version__ = "0.1.0"
