"""FunctionGym: guess a hidden arithmetic rule ``f(a, b, c, d)`` by probing it; no user, no LLM.

(Its expert, which solves the gym by probing, is in :mod:`.expert` and :mod:`.solver`.)

Data: UserRL's ``functions.json`` (a list of ``{id, rule, test_case, expected_result}``), passed as
``functions_path`` (default: the copy in ``assets/gyms/functions.json``). A row names its function by
``create_kwargs.id``; its ``reward_model.ground_truth`` (the expected result) is cross-checked.

Actions
- ``search`` with ``test``: reveals the test case ``f(x1, x2, x3, x4) = ?``.
- ``action`` with four numbers: returns ``f`` at those inputs, rounded to 4 decimals; the test case
  itself is refused. Inputs where ``f`` is undefined (division by zero, a non-real or too large
  result) say so.
- ``answer`` with a number: correct iff within 1e-6 of the expected result.

What counts as four numbers and as a number is UserRL's by default (``parsing="userrl"``, A85): a probe
is any text holding exactly four matches of UserRL's number pattern ("a=1, b=2, c=3, d=4", "1.5 2 3 4"), an
answer is the whole content as Python's ``float`` reads it ("-16"; not "The answer is -16" nor "1,234").
``parsing="package"`` keeps our stricter probe (exactly four integers) and looser answer (the one number
in the text, thousands commas dropped).

Reward: 1.0 for the first correct answer (the episode then ends), 0.0 for everything else; the
episode score (sum of step rewards) is therefore 0 or 1. A wrong answer costs nothing but a turn.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from mimesis_pl.envs.assets import bundled_gym_file
from mimesis_pl.envs.base import Action, Gym, StepResult, TaskDataError, require
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.user_protocol import UserSimulator

# Results beyond this magnitude are reported as "too large": it bounds the work of probing power
# towers such as ``c ** d ** b ** a`` and is shared with the expert's solver so both agree.
RESULT_LIMIT = 1e15
ANSWER_TOLERANCE = 1e-6

_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.USub,
    ast.UAdd,
    ast.Name,
    ast.Load,
    ast.Constant,
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# UserRL's probe number pattern (function_env.py ``_parse_numbers``).
_USERRL_PROBE_NUMBER = re.compile(r"-?\d+\.?\d*")
Parsing = Literal["userrl", "package"]


def compile_rule(rule: str) -> ast.Expression:
    """Parse a rule, allowing only + - * / ** over a, b, c, d and numeric constants."""
    try:
        tree = ast.parse(rule, mode="eval")
    except SyntaxError as err:
        raise TaskDataError(f"function rule {rule!r} is not an expression: {err.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise TaskDataError(f"function rule {rule!r} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Name) and node.id not in "abcd":
            raise TaskDataError(f"function rule {rule!r} uses unknown variable {node.id!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise TaskDataError(f"function rule {rule!r} has a non-numeric constant {node.value!r}")
    return tree


def evaluate_rule(rule: str | ast.Expression, values: Sequence[float]) -> float | None:
    """``f(values)`` in float arithmetic, rounded to 4 decimals; ``None`` where undefined."""
    tree = compile_rule(rule) if isinstance(rule, str) else rule
    if len(values) != 4:
        raise ValueError(f"a function takes four inputs, got {len(values)}")
    env = dict(zip("abcd", (float(v) for v in values), strict=True))
    try:
        result = _eval(tree.body, env)
    except (ZeroDivisionError, OverflowError):
        return None
    if isinstance(result, complex) or not math.isfinite(result) or abs(result) > RESULT_LIMIT:
        return None
    return round(result, 4)


def _eval(node: ast.AST, env: dict[str, float]) -> Any:
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else value
    assert isinstance(node, ast.BinOp)
    left, right = _eval(node.left, env), _eval(node.right, env)
    if isinstance(left, complex) or isinstance(right, complex):
        return complex("nan")
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if isinstance(node.op, ast.Div):
        return left / right
    return left**right


def format_number(value: float) -> str:
    """``12`` for integral values, else the 4-decimal rounding (what the agent sees)."""
    return str(int(value)) if float(value).is_integer() else repr(round(value, 4))


def format_inputs(values: Sequence[float]) -> str:
    return ", ".join(format_number(v) for v in values)


def probe_inputs(content: str, parsing: Parsing = "userrl") -> tuple[float, ...] | None:
    """The four inputs of a probe, or None. ``userrl``: any text with exactly four matches of UserRL's pattern
    ("a=1, b=2, c=3, d=4" → 1, 2, 3, 4); ``package``: exactly four integers split by spaces/commas."""
    if parsing == "userrl":
        values = tuple(float(m) for m in _USERRL_PROBE_NUMBER.findall(content))
        return values if len(values) == 4 else None
    parts = [p for p in re.split(r"[\s,;]+", content.strip().strip("()[]")) if p]
    try:
        ints = tuple(int(p) for p in parts)
    except ValueError:
        return None
    return ints if len(ints) == 4 else None


def answer_value(content: str, parsing: Parsing = "userrl") -> float | None:
    """The answered number, or None. ``userrl``: Python's ``float`` of the whole content ("-16", " 2.5 ";
    not "The answer is -16" nor "1,234"); ``package``: the one number in the text, thousands commas dropped."""
    if parsing == "userrl":
        try:
            return float(content.strip())
        except ValueError:
            return None
    numbers = _NUMBER.findall(content.replace(",", ""))
    return float(numbers[0]) if len(numbers) == 1 else None


@lru_cache(maxsize=8)
def load_functions(path: str) -> dict[str, dict[str, Any]]:
    """``functions.json`` indexed by id (cached per path)."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TaskDataError(f"cannot read function data {path}: {err}") from None
    if not isinstance(records, list):
        raise TaskDataError(f"{path}: expected a JSON list of functions")
    table: dict[str, dict[str, Any]] = {}
    for i, record in enumerate(records):
        where = f"{path}: record {i}"
        fid = require(record, "id", where=where)
        compile_rule(require(record, "rule", where=f"{where} ({fid})"))
        case = require(record, "test_case", where=f"{where} ({fid})")
        if not (isinstance(case, list) and len(case) == 4 and all(isinstance(v, int) for v in case)):
            raise TaskDataError(f"{where} ({fid}): field 'test_case' must be four integers, got {case!r}")
        table[str(fid)] = record
    return table


class FunctionGym(Gym):
    """Probe a hidden four-argument arithmetic function, then answer its value on the test case."""

    env_name = "FunctionGym"
    data_sources = ("interact_function",)
    choices = ("action", "answer", "search")
    needs_user = False

    def __init__(
        self,
        *,
        user: UserSimulator | None = None,
        functions_path: str | Path | None = None,
        parsing: Parsing = "userrl",
    ) -> None:
        super().__init__(user=user)
        if parsing not in ("userrl", "package"):
            raise ValueError(f"FunctionGym: parsing must be 'userrl' or 'package', got {parsing!r}")
        self.functions_path = Path(functions_path) if functions_path else bundled_gym_file("functions.json")
        self.parsing = parsing

    async def _reset(self, task: GymTask) -> None:
        fid = str(require(task.hidden, "id", where=task.source))
        table = load_functions(str(self.functions_path))
        if fid not in table:
            raise TaskDataError(f"{task.source}: function id {fid!r} is not in {self.functions_path}")
        record = table[fid]
        self._rule = compile_rule(record["rule"])
        self._test_case: tuple[int, ...] = tuple(record["test_case"])
        self._expected = float(record["expected_result"])
        truth = task.hidden.get("ground_truth")
        if truth is not None and abs(float(truth) - self._expected) > ANSWER_TOLERANCE:
            raise TaskDataError(
                f"{task.source}: reward_model.ground_truth={truth!r} disagrees with expected_result="
                f"{self._expected} of {fid} in {self.functions_path}"
            )

    async def _step(self, action: Action) -> StepResult:
        if action.choice == "search":
            if action.content.strip().strip("'\"`").lower() != "test":
                return self._result("Invalid search: the only search is `test`, which shows the test case.")
            return self._result(
                f"The test case is f({format_inputs(self._test_case)}) = ?  "
                "Answer with the value of the hidden function at these inputs."
            )
        if action.choice == "action":
            return self._probe(action.content)
        return self._answer(action.content)

    def _probe(self, content: str) -> StepResult:
        values = probe_inputs(content, self.parsing)
        if values is None:
            what = "numbers" if self.parsing == "userrl" else "integers separated by spaces"
            return self._result(f"Invalid input: give exactly four {what}, e.g. `1 2 3 4`.")
        if values == self._test_case:
            return self._result("Those inputs are the test case; probe other inputs or answer.")
        result = evaluate_rule(self._rule, values)
        if result is None:
            return self._result(
                f"f({format_inputs(values)}) is undefined (division by zero, or not a finite real number)."
            )
        return self._result(f"f({format_inputs(values)}) = {format_number(result)}")

    def _answer(self, content: str) -> StepResult:
        value = answer_value(content, self.parsing)
        if value is None:
            return self._result("Invalid answer: give a single number.")
        if abs(value - self._expected) <= ANSWER_TOLERANCE:
            return self._result(
                f"Correct! f({format_inputs(self._test_case)}) = {format_number(value)}.", 1.0, done=True
            )
        return self._result("Incorrect. You may probe more inputs or answer again.")
