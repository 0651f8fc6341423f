"""Old home of the paper's published rows, kept so that old imports work: each suite keeps its own beside its
loader (``<suite>/data.py``: ``REALUSERSIM``/``REALUSERSIM_CARD``, ``TAU_USI``/``TAU_USI_HUMAN``, ``SOUL``)."""

from mimesis_pl.eval.simulator.realusersim.data import REALUSERSIM, REALUSERSIM_CARD
from mimesis_pl.eval.simulator.soul.data import SOUL
from mimesis_pl.eval.simulator.tau_usi.data import TAU_USI, TAU_USI_HUMAN

__all__ = ["REALUSERSIM", "REALUSERSIM_CARD", "SOUL", "TAU_USI", "TAU_USI_HUMAN"]
