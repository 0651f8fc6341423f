"""Simulator-fidelity evaluation suites run by ``mimesis-pl test``: SOUL, RealUserSim PT3, tau-USI and Turing.

Each suite (:class:`~mimesis_pl.eval.simulator.base.FidelitySuite`) talks to its models through one small
Protocol (:class:`~mimesis_pl.eval.simulator.models.ChatModel`: served over HTTP, or scripted offline),
runs its items through the agent evaluation's resumable trial cache, and reports ``results.json``,
``results.md``, a PNG and TensorBoard scalars through
:class:`~mimesis_pl.modules.simulator_eval.SimulatorEvalModule`. SOUL (:mod:`.soul`) runs its rows through
the simulator-RL tasks themselves (:mod:`mimesis_pl.tasks`), in validation mode.
"""
