"""RealUserSim PT3: conversations under three conditions, two-call judging, the Fidelity Index.

``suite`` (the :class:`RealUserSimSuite`), ``scoring`` (pure), ``data`` (cases, judge prompts, the DataModule,
the published rows), ``prompt`` (the benchmark's own simulator prompt), ``protocol`` (conversation and judging).
The old ``realusersim`` module's names are re-exported here (YAML ``class_path`` keeps working).
"""

from mimesis_pl.eval.simulator.realusersim.suite import RealUserSimSuite

__all__ = ["RealUserSimSuite"]
