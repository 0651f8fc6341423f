"""Old home of the suites' DataModules, kept so that old imports and YAML ``class_path`` values work: each
DataModule is in its suite's folder (``<suite>/data.py``), their base is
:class:`~mimesis_pl.eval.simulator.base.ItemDataModule`. New configs name the new paths."""

from mimesis_pl.eval.simulator.realusersim.data import RealUserSimDataModule, RealUserSimItem, sattolo_derangement
from mimesis_pl.eval.simulator.soul.data import SoulDataModule
from mimesis_pl.eval.simulator.tau_usi.data import TauTaskDataModule
from mimesis_pl.eval.simulator.turing.data import TuringRowDataModule

__all__ = [
    "RealUserSimDataModule",
    "RealUserSimItem",
    "SoulDataModule",
    "TauTaskDataModule",
    "TuringRowDataModule",
    "sattolo_derangement",
]
