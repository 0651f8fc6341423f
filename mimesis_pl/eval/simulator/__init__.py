"""Simulator-fidelity evaluation suites run by ``mimesis-pl test``: SOUL, RealUserSim PT3, tau-USI and Turing.

Each suite (:class:`~mimesis_pl.eval.simulator.base.FidelitySuite`) talks to its models through one small
Protocol (:class:`~mimesis_pl.eval.simulator.models.SuiteModel`: served over HTTP, or scripted offline),
runs its items through the agent evaluation's resumable trial cache, and reports ``results.json``,
``results.md``, a PNG and TensorBoard scalars through
:class:`~mimesis_pl.modules.simulator_eval.SimulatorEvalModule`. SOUL (:mod:`.soul`) runs its rows through
the simulator-RL tasks themselves (:mod:`mimesis_pl.tasks`), in validation mode.

One folder per suite (``soul/``, ``realusersim/``, ``tau_usi/``, ``turing/``: ``suite.py``, ``scoring.py``,
``data.py`` and the suite's published rows), chosen by ``class_path``; the modules at this level are what the
suites share (docs/decisions.md D7). The old flat paths are gone and fail naming the new homes (mimesis_pl/moved.py).
"""


def __getattr__(name: str):
    from mimesis_pl.moved import moved_attribute

    return moved_attribute(__name__, name)
