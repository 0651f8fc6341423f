"""``mimesis-pl``: LightningCLI for fit / validate / test, plus helper subcommands.

mimesis-pl fit --config configs/tiny/chat_sft.yaml
mimesis-pl data show --config configs/tiny/chat_sft.yaml --n 2
mimesis-pl assets build --out assets
mimesis-pl shim --upstream http://127.0.0.1:8000/v1
mimesis-pl serve runs/<job>/version_0/hf/final --port 8000
mimesis-pl probe runs/<job>/version_0/hf/final --contexts probe.jsonl
"""

from __future__ import annotations

import sys

from .cli_base import TRAINER_DEFAULTS, ConfigError, DataOnlyCLI, MimesisCLI, root_message
from .lifecycle import SIGTERM_EXIT_CODE
from .llm.secrets import redact_secrets
from .quiet import silence_known_noise
from .rollout.failures import RolloutFailureError
from .run_folder import RunFolderInUse

#: Exit code of a run stopped because too many episodes failed for infrastructure reasons (A76).
ROLLOUT_FAILURE_EXIT_CODE = 3

__all__ = ["TRAINER_DEFAULTS", "ConfigError", "DataOnlyCLI", "MimesisCLI", "main", "root_message"]

HELPER_COMMANDS = """helper commands (each has its own --help):
  mimesis-pl data {show,prepare-gyms,record-experts,mix-persuade}   inspect and prepare data
  mimesis-pl assets build --out assets                  build the tiny local models and sample data
  mimesis-pl shim --upstream URL                        serve the privileged-channel shim
  mimesis-pl serve MODEL_DIR [--engine hf|vllm]         serve an export over an OpenAI-compatible API
  mimesis-pl probe MODEL_DIR --contexts FILE            P(correct decision) on fixed contexts, from logits"""


def _helper_commands():
    from .assets.build import main as assets_main
    from .data.commands import main as data_main
    from .eval.probe_command import main as probe_main
    from .serve.command import main as serve_main

    commands = {"assets": assets_main, "data": data_main, "serve": serve_main, "probe": probe_main}
    try:
        from .shim.serve import main as shim_main
    except ImportError:  # the shim's optional server pieces are missing
        shim_main = None
    if shim_main is not None:
        commands["shim"] = shim_main
    return commands


def config_paths(argv: list[str]) -> list[str]:
    """The files given with ``--config PATH`` / ``--config=PATH``."""
    paths = [a.split("=", 1)[1] for a in argv if a.startswith("--config=")]
    paths += [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"]
    return paths


def config_file_error(argv: list[str]) -> str | None:
    """One line naming the first ``--config`` file that is not valid YAML, with the parser's place; else ``None``
    (a missing file is left to LightningCLI, which names it)."""
    import yaml

    for path in config_paths(argv):
        try:
            with open(path, encoding="utf-8") as handle:
                data = yaml.safe_load(handle)
        except OSError:
            continue
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else path
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            return f"{where}: invalid YAML ({problem})"
        old = old_kind_error(data)
        if old is not None:
            return f"{path}: {old}"
    return old_kind_error(_flag_values(argv))


def old_kind_error(data: object) -> str | None:
    """The first ``kind:`` choice issue #38 replaced by ``class_path``, with the spelling to write instead."""
    from .checks import old_kind_message
    from .moved import old_kind_paths, renamed_kinds_at

    for where, mapping in old_kind_paths(data):
        return old_kind_message(where, mapping, renamed_kinds_at(where))
    return None


def _flag_values(argv: list[str]) -> dict[str, object]:
    """``--a.b VALUE`` / ``--a.b=VALUE`` flags whose value is a YAML mapping, keyed by the flag's dotted path (a
    ``--a.b.kind VALUE`` flag as ``{a.b: {kind: VALUE}}``)."""
    import yaml

    out: dict[str, object] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("--"):
            continue
        key, eq, value = arg[2:].partition("=")
        value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if key.endswith(".kind"):
            out[key.removesuffix(".kind")] = {"kind": value}
        elif value.lstrip().startswith("{"):
            try:
                out[key] = yaml.safe_load(value)
            except yaml.YAMLError:
                continue
    return {k: v for k, v in out.items() if isinstance(v, dict)}


def main(argv: list[str] | None = None) -> int:
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("assets", "data", "shim", "serve", "probe"):
        commands = _helper_commands()
        if argv[0] not in commands:
            print(f"mimesis-pl {argv[0]}: not available in this installation", file=sys.stderr)
            return 2
        return int(commands[argv[0]](argv[1:]) or 0)
    silence_known_noise()
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    unreadable = config_file_error(argv)
    if unreadable is not None:  # jsonargparse would say only "<unicode string>, line 2"
        print(f"mimesis-pl {argv[0] if argv else ''}: error: {unreadable}", file=sys.stderr)
        return 2

    try:
        # From the console script, let LightningCLI read sys.argv itself: passing the same list as ``args``
        # made it warn ("args parameter ...") on every command.
        cli = MimesisCLI(args=None if from_command_line else argv)
    except (ConfigError, RunFolderInUse) as err:
        print(f"mimesis-pl {argv[0] if argv else ''}: error: {redact_secrets(str(err))}", file=sys.stderr)
        return 2
    except RolloutFailureError as err:  # the simulator, a judge or a partner is down (A76)
        print(f"mimesis-pl {argv[0] if argv else ''}: stopped: {err}", file=sys.stderr)
        return ROLLOUT_FAILURE_EXIT_CODE
    except SIGTERMException:  # Lightning's carries no code, so the shell would see success (A72)
        print("mimesis-pl: stopped by SIGTERM (see the checkpoint path logged above)", file=sys.stderr)
        return SIGTERM_EXIT_CODE
    except SystemExit as done:
        if not argv or argv[0] in ("-h", "--help"):  # LightningCLI's help knows only its own subcommands
            print(f"\n{HELPER_COMMANDS}", file=sys.stdout if done.code == 0 else sys.stderr)
        raise
    if cli.subcommand in ("validate", "test") and cli.trainer.received_sigterm:
        # Lightning finishes the last batch and returns normally; a stopped run must not read as a success (A72).
        print(
            f"mimesis-pl {cli.subcommand}: stopped by SIGTERM in the last batch; what finished is saved "
            "(rerun the same command to resume)",
            file=sys.stderr,
        )
        return SIGTERM_EXIT_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main())
