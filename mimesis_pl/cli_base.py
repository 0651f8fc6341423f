"""The LightningCLI classes: :class:`MimesisCLI` (fit / validate / test) and :class:`DataOnlyCLI` (its parsing
and config merging, the DataModule only).

Their own module so that ``mimesis-pl data show`` (:mod:`mimesis_pl.data.show`) builds a DataModule as ``fit``
does without importing the entry point :mod:`mimesis_pl.cli`, which sits above everything.
"""

from __future__ import annotations

import lightning.pytorch as pl
from jsonargparse import set_parsing_settings
from lightning.pytorch.cli import LightningCLI

from .config_save import RunConfigCallback
from .lifecycle import RunGuard

# A ``class_path`` mapping inside an ``Any``-typed value stays a mapping, as written (jsonargparse 5's default;
# 4.x instantiated any class a config named there). ``episode.gym_options`` is typed ``dict[str, dict]`` so that
# jsonargparse does not fill a class's defaults into its runtimes, backends and judges either (D32).
set_parsing_settings(instantiate_subclass_spec_in_any=False)

TRAINER_DEFAULTS = {
    "logger": {"class_path": "lightning.pytorch.loggers.TensorBoardLogger", "init_args": {"save_dir": "runs"}},
    # Our DataModules shard their own resumable batch samplers across ranks.
    "use_distributed_sampler": False,
}


class MimesisCLI(LightningCLI):
    """LightningCLI in subclass mode: ``model`` and ``data`` are ``class_path`` + ``init_args``.

    Every run writes its fully resolved config (``config.yaml``) into the logger's run folder.
    A DataModule with ``tokenizer_path: null`` gets the model's tokenizer.
    """

    def __init__(self, args=None, run: bool = True, **kwargs) -> None:
        super().__init__(
            pl.LightningModule,
            pl.LightningDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            save_config_callback=RunConfigCallback,
            save_config_kwargs={"overwrite": True},
            trainer_defaults=TRAINER_DEFAULTS,
            args=args,
            run=run,
            **kwargs,
        )

    @staticmethod
    def subcommands() -> dict[str, set[str]]:
        # No module here implements predict_step, so `predict` is not offered.
        commands = LightningCLI.subcommands()
        commands.pop("predict", None)
        return commands

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
        except (ValueError, TypeError, KeyError, FileNotFoundError, FileExistsError) as err:
            raise ConfigError(root_message(err)) from err
        datamodule, model = self.datamodule, self.model
        if hasattr(datamodule, "connect") and getattr(datamodule, "tokenizer_path", "") is None:
            datamodule.connect(model_path=getattr(model, "model_path", None))
        # Services closed on every exit path, a checkpoint and a non-zero exit on SIGTERM (A72).
        self.trainer.callbacks.append(RunGuard())

    def _claim_run_folder(self) -> None:
        """Refuse to start in a run folder another live run is using (D21), before anything is written."""
        for callback in self.trainer.callbacks:
            if isinstance(callback, RunConfigCallback):
                callback.claim(self.trainer)

    def _run_subcommand(self, subcommand: str) -> None:
        """Run it; an input or service error before the first batch is one :class:`SetupError` line (exit 2), and
        the run folder it made is removed (E29). Errors once batches ran keep their traceback."""
        try:
            super()._run_subcommand(subcommand)
        except (OSError, ValueError, KeyError, ImportError) as err:
            saver = next((c for c in self.trainer.callbacks if isinstance(c, RunConfigCallback)), None)
            if saver is None or saver.batches_started:
                raise
            saver.remove_unused_run_folder()
            raise SetupError(f"{type(err).__name__}: {root_message(err)}") from err

    def before_fit(self) -> None:
        self._claim_run_folder()

    def before_validate(self) -> None:
        self._claim_run_folder()

    def before_test(self) -> None:
        self._claim_run_folder()


class ConfigError(ValueError):
    """A class of the config could not be built from its values; the message is the one line that says why."""


class SetupError(ConfigError):
    """A run failed while setting up (data, services, weights), before its first batch: one line, exit 2 (E29)."""


def root_message(err: BaseException) -> str:
    """The message of the innermost cause of ``err``: the constructor's own error, not the parser's wrappers.

    jsonargparse wraps a constructor's ``ValueError`` in a union-validation error that lists every subtype
    tried and dumps the whole config namespace; the cause at the bottom is the one line that names the key.
    """
    while err.__cause__ is not None:
        err = err.__cause__
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0] if len(text.splitlines()) == 1 else " ".join(line.strip() for line in text.splitlines())


class DataOnlyCLI(MimesisCLI):
    """:class:`MimesisCLI`'s parsing and config merging, instantiating only the DataModule.

    ``mimesis-pl data show`` uses it so that what it shows is what ``fit`` trains, without loading
    model weights or building a trainer.
    """

    def instantiate_classes(self) -> None:
        from jsonargparse import ArgumentParser, Namespace

        parser = ArgumentParser(exit_on_error=False)
        parser.add_subclass_arguments(pl.LightningDataModule, "data")
        self.datamodule = parser.instantiate_classes(Namespace(data=self.config.data)).data
        model_args = self.config.model.get("init_args") if self.config.get("model") else None
        model_path = None
        if model_args is not None:  # SFT modules name it directly, RL modules in their policy settings
            policy = model_args.get("policy")
            model_path = model_args.get("model_path") or (policy.get("model_path") if policy is not None else None)
        if hasattr(self.datamodule, "connect") and getattr(self.datamodule, "tokenizer_path", "") is None:
            self.datamodule.connect(model_path=model_path)
