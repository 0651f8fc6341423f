"""``mimesis-pl data …`` subcommands."""

from __future__ import annotations

import sys

USAGE = """usage: mimesis-pl data COMMAND ...

  show            render samples of a configured DataModule with the trained tokens marked
  prepare-gyms    split UserRL-format gym parquet files into train/val prompt sets by task
  record-experts  record successful scripted-expert episodes as agent-SFT conversations (JSONL)
  record-simulator  record the scripted users' side of gym episodes as simulator SFT rows (role-swap chat rows)
  make-cuegym     write CueGym task splits (train/test/sft) and its decision-probe contexts
  mix-persuade    add PersuadeGym training tasks recombined from the training arguments
  usersim-rows    build usersim-behavior rows (every applicable behaviour + control) from ABCD conversations
  notes           read what a CSD run's coach told the agent (<run>/coach_notes.jsonl)
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "show":
        from .show import main as run
    elif cmd == "prepare-gyms":
        from .gym_prep import main as run
    elif cmd == "record-experts":
        from .expert_traces import main as run
    elif cmd == "record-simulator":
        from .simulator_traces import main as run
    elif cmd == "make-cuegym":
        from .cuegym import main as run
    elif cmd == "mix-persuade":
        from .persuade_mix import main as run
    elif cmd == "notes":
        from .notes_show import main as run
    elif cmd == "usersim-rows":
        from ..tasks.usersim_behavior.builder import main as run
    else:
        print(f"mimesis-pl data: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return int(run(rest) or 0)
    except (OSError, ValueError) as err:  # missing or corrupt inputs: the message names the file (no traceback)
        print(f"mimesis-pl data {cmd}: error: {err}", file=sys.stderr)
        return 2
