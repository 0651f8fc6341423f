"""Old home of the suites' loaders, kept so that old imports work: the shared readers are in :mod:`.rows`, each
suite's loader in its own folder (``soul/data.py``, ``realusersim/data.py``, ``turing/data.py``,
``tau_usi/data.py``). New code imports from there."""

from mimesis_pl.eval.simulator.realusersim.data import (
    JudgePrompts,
    RealUserSimCase,
    load_judge_prompts,
    load_realusersim_cases,
    realusersim_case_id,
)
from mimesis_pl.eval.simulator.rows import DataFormatError, expand, field_of, iter_rows, messages_of, read_json
from mimesis_pl.eval.simulator.soul.data import SOUL_AXES, SoulRow, load_soul_validation
from mimesis_pl.eval.simulator.turing.data import TuringRow, load_turing_rows

__all__ = [
    "SOUL_AXES",
    "DataFormatError",
    "JudgePrompts",
    "RealUserSimCase",
    "SoulRow",
    "TuringRow",
    "expand",
    "field_of",
    "iter_rows",
    "load_judge_prompts",
    "load_realusersim_cases",
    "load_soul_validation",
    "load_turing_rows",
    "messages_of",
    "read_json",
    "realusersim_case_id",
]
