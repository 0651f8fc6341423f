"""Simulator-fidelity evaluation suites run by ``mimesis-pl test``: RealUserSim PT3, tau-USI and Turing.

Each suite (:class:`~mimesis_pl.eval.simulator.base.FidelitySuite`) talks to its models through one small
Protocol (:class:`~mimesis_pl.eval.simulator.models.ChatModel`: served over HTTP, or scripted offline),
runs its items through the agent evaluation's resumable trial cache, and reports ``results.json``,
``results.md``, a PNG and TensorBoard scalars through
:class:`~mimesis_pl.modules.simulator_eval.SimulatorEvalModule`. SOUL runs through the simulator-RL tasks
and is not here; its validation-parquet loader is (:func:`~.loaders.load_soul_validation`).
"""
