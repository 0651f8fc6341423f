"""Turing: the simulator writes a held-out PRISM user turn, a judge rates which of A/B a human wrote.

``suite`` (the :class:`TuringSuite`), ``scoring`` (cleaning, penalties, a seed's summary; pure), ``data`` (rows
and the DataModule). The old ``turing`` module's names are re-exported here (YAML ``class_path`` keeps working).
"""

from mimesis_pl.eval.simulator.turing.scoring import PENALTIES, clean_generation, penalties
from mimesis_pl.eval.simulator.turing.suite import JUDGE_SYSTEM, TuringSuite, judge_messages

__all__ = ["JUDGE_SYSTEM", "PENALTIES", "TuringSuite", "clean_generation", "judge_messages", "penalties"]
