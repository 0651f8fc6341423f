"""The package's import direction: the architecture's forbidden arrows, no import circles, no lazy package tricks.

Both checks count every import, also one written inside a function or under ``if TYPE_CHECKING:``: a lazy import is
still an arrow, and moving it into a function neither makes it point the right way nor breaks a circle (issue #38:
0 circles). The *nevers* come from one declared map of layers (:data:`LAYERS`): no module imports one of a higher
layer (``envs`` never imports ``users``, ``rollout`` never imports ``tasks`` …). The *circles*:
no two modules import each other, directly or round a loop; a package is not taken to import its ``__init__``
implicitly, since every ``__init__`` re-exporting its own modules would otherwise close a circle with each of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mimesis_pl"

# The declared map, lowest layer first: a module imports modules of its own layer or lower ones, never of a higher
# one (its *nevers* are every layer above it). A module belongs to the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # no package imports but each other: failures, checks, the chat template layer, the served-model clients
    (
        "base",
        ("mimesis_pl", "failures", "checks", "moved", "quiet", "spans", "lifecycle", "run_folder", "model_paths")
        + ("scale", "metrics", "assets", "llm", "chat"),
    ),
    # model math and loading (no Lightning), the privileged shim, the saved run config
    ("math", ("rl", "causal_lm", "shim", "config_save")),
    # what a rollout runs on: the engines, the gyms; the CLI classes (cli_base) a data command reuses
    ("engines and gyms", ("rollout.engines", "envs", "cli_base")),
    # the simulated users, serving a checkpoint, the CSD coach
    ("users and coach", ("users", "serve", "csd")),
    ("rollout", ("rollout",)),
    ("tasks", ("tasks",)),
    ("stages and data", ("stages", "data")),
    ("evaluation", ("eval",)),
    ("lightning modules", ("modules",)),
    ("entry point", ("cli",)),
)

# Arrows that break the map today and are being moved by other work (``module -> layer``: reason). Keep it empty.
PENDING_NEVERS: dict[str, str] = {}

# Circles being removed by other work (keep it empty; a stale entry fails test_pending_cycles_are_still_there).
PENDING_CYCLES: list[frozenset[str]] = []


def _module_name(path: Path) -> str:
    """``mimesis_pl.envs.base`` for envs/base.py, ``mimesis_pl.envs`` for envs/__init__.py."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from (``mimesis_pl.envs.gyms`` for envs/gyms/a.py)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1])


def _load_time_nodes(tree: ast.Module) -> Iterable[ast.AST]:
    """Every statement that runs when the module is loaded: all but what sits inside a function body."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # an import statement cannot sit elsewhere
            todo += list(ast.iter_child_nodes(node))


def import_statements(source: str, package: str, *, load_time_only: bool = False) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of each import in ``source``, relative ones resolved from ``package``.

    ``import a.b`` gives ``(line, "a.b", [])``; ``from a import b, c`` gives ``(line, "a", ["b", "c"])``.
    ``load_time_only`` leaves out the imports inside function bodies.
    """
    tree = ast.parse(source)
    found = []
    for node in _load_time_nodes(tree) if load_time_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return sorted(found, key=lambda statement: statement[0])


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute name) of everything ``source`` imports, function bodies included.

    ``from a import b`` yields both ``a`` and ``a.b``: ``b`` may be a submodule.
    """
    return [
        (line, name)
        for line, module, names in import_statements(source, package)
        for name in [module, *(f"{module}.{n}" for n in names)]
    ]


def _within(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


def _sources() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_graph(
    sources: dict[str, str], packages: dict[str, str], *, load_time_only: bool = False
) -> dict[str, set[str]]:
    """Module → the package modules it imports (only at load time, with ``load_time_only``; names that are not
    package modules are dropped).

    ``from a import b`` is an arrow to the submodule ``a.b`` where there is one (Python then needs ``a`` only as the
    package being loaded), else to ``a``, whose namespace holds ``b``.
    """
    graph: dict[str, set[str]] = {}
    for name, text in sources.items():
        targets = set()
        for _, module, names in import_statements(text, packages[name], load_time_only=load_time_only):
            targets |= {f"{module}.{n}" if f"{module}.{n}" in sources else module for n in names} if names else {module}
        graph[name] = {target for target in targets if target in sources and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def layer_of(module: str) -> tuple[int, str] | None:
    """``(index, name)`` of the declared layer ``module`` belongs to (longest matching prefix), else ``None``."""
    best: tuple[int, int, str] | None = None
    for index, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            full = "mimesis_pl" if prefix == "mimesis_pl" else f"mimesis_pl.{prefix}"
            exact_only = prefix == "mimesis_pl"
            if (module == full if exact_only else _within(module, full)) and (best is None or len(full) > best[0]):
                best = (len(full), index, name)
    return None if best is None else (best[1], best[2])


def never_violations(sources: dict[str, str], packages: dict[str, str]) -> list[str]:
    """``module:line imports name`` for every import (function bodies included) of a module in a higher layer."""
    offenders = []
    for module, text in sorted(sources.items()):
        mine = layer_of(module)
        for line, name in imported_modules(text, packages[module]):
            theirs = layer_of(name) if _within(name, "mimesis_pl") else None
            if mine is None or theirs is None or theirs[0] <= mine[0]:
                continue
            if f"{module} -> {theirs[1]}" not in PENDING_NEVERS:
                offenders.append(f"{module}:{line} imports {name} ({mine[1]} < {theirs[1]})")
    return sorted(set(offenders))


def _package_texts() -> tuple[dict[str, str], dict[str, str]]:
    paths = _sources()
    return {name: path.read_text() for name, path in paths.items()}, {
        name: _package_of(path) for name, path in paths.items()
    }


def test_imported_modules_resolves_relative_imports():
    assert {n for _, n in imported_modules("from ...users import x", "mimesis_pl.envs.gyms")} == {
        "mimesis_pl.users",
        "mimesis_pl.users.x",
    }
    assert any(_within(n, "mimesis_pl.users") for _, n in imported_modules("from .. import users", "mimesis_pl.envs"))
    lazy = "def f():\n    import mimesis_pl.users.scripted"
    assert any(_within(n, "mimesis_pl.users") for _, n in imported_modules(lazy, "x"))
    assert import_statements(lazy, "x", load_time_only=True) == []
    assert not any(
        _within(n, "mimesis_pl.users")
        for _, n in imported_modules("from .user_protocol import UserReply", "mimesis_pl.envs")
    )


def test_load_time_imports_keep_type_checking_blocks_and_class_bodies():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from a import B\n"
        "class C:\n    import d\n"
        "def f():\n    import g\n"
    )
    assert import_statements(source, "p", load_time_only=True) == [
        (1, "typing", ["TYPE_CHECKING"]),
        (3, "a", ["B"]),
        (5, "d", []),
    ]


def test_circles_finds_every_strongly_connected_component():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert sorted(sorted(c) for c in circles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_graph_from_sources_sees_a_circle_through_a_type_checking_import():
    sources = {
        "p.base": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.tasks import GymTask\n",
        "p.tasks": "from p.base import TaskDataError\n",
        "p.cli": "def main():\n    from p.show import x\n",
        "p.show": "def load():\n    from .cli import DataOnlyCLI\n",
    }
    packages = dict.fromkeys(sources, "p")
    assert circles(import_graph(sources, packages, load_time_only=True)) == [frozenset({"p.base", "p.tasks"})]
    both = [frozenset({"p.base", "p.tasks"}), frozenset({"p.cli", "p.show"})]  # a lazy import closes a circle too
    assert sorted(circles(import_graph(sources, packages)), key=sorted) == both


def test_never_violations_counts_imports_inside_functions():
    sources = {
        "mimesis_pl.rollout.loop": "def f():\n    from ..tasks.base import RowError\n",
        "mimesis_pl.data.show": "def load():\n    from ..cli import DataOnlyCLI\n",
        "mimesis_pl.cli": "from .data.show import load\n",
    }
    packages = {"mimesis_pl.rollout.loop": "mimesis_pl.rollout", "mimesis_pl.data.show": "mimesis_pl.data"}
    packages["mimesis_pl.cli"] = "mimesis_pl"
    assert never_violations(sources, packages) == [
        "mimesis_pl.data.show:2 imports mimesis_pl.cli (stages and data < entry point)",
        "mimesis_pl.data.show:2 imports mimesis_pl.cli.DataOnlyCLI (stages and data < entry point)",
        "mimesis_pl.rollout.loop:2 imports mimesis_pl.tasks.base (rollout < tasks)",
        "mimesis_pl.rollout.loop:2 imports mimesis_pl.tasks.base.RowError (rollout < tasks)",
    ]


def test_every_package_module_has_a_declared_layer():
    assert [m for m in _sources() if layer_of(m) is None] == []
    assert layer_of("mimesis_pl.rollout.engines.vllm") == (2, "engines and gyms")
    assert layer_of("mimesis_pl.rollout.loop") == (4, "rollout") and layer_of("mimesis_pl.cli") == (9, "entry point")
    assert layer_of("mimesis_pl.cli_base") == (2, "engines and gyms") and layer_of("mimesis_pl") == (0, "base")


def test_the_package_breaks_no_never():
    offenders = never_violations(*_package_texts())
    assert offenders == [], (
        "forbidden arrows (move the shared piece down into the lower layer; a lazy import does not fix one):\n"
        + "\n".join(offenders)
    )


def test_the_package_has_no_import_circle():
    found = circles(import_graph(*_package_texts()))
    new = [sorted(c) for c in found if c not in PENDING_CYCLES]
    assert new == [], "import circles (move the shared piece into a module both can import):\n" + "\n".join(
        " <-> ".join(c) for c in new
    )


def test_pending_cycles_are_still_there():
    """An allowance that no longer matches a circle is stale: empty it so a circle cannot come back unseen."""
    found = circles(import_graph(*_package_texts()))
    assert [c for c in PENDING_CYCLES if c not in found] == []


def _only_names_moved_modules(node: ast.FunctionDef) -> bool:
    """A package ``__getattr__`` that only answers for removed module paths (``return moved_attribute(...)``)."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return len(calls) == 1 and getattr(calls[0].func, "id", "") == "moved_attribute"


def test_no_package_hides_imports_behind_module_getattr():
    offenders = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("__init__.py"))
        if any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == "__getattr__"
            and not _only_names_moved_modules(node)
            for node in ast.parse(path.read_text()).body
        )
    ]
    assert offenders == [], f"module-level __getattr__ in {offenders}: import plainly instead"


def test_the_readme_layout_names_every_package_folder_and_top_level_module():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    missing = [f"{name}/" for name in folders if f"{name}/" not in layout]
    missing += [name for name in modules if name not in layout]
    assert missing == [], f"README's Layout does not name: {missing}"


def test_no_two_classes_of_the_package_share_a_name():
    """One meaning per class name (issue #38 found six names defined twice with different meanings)."""
    homes: dict[str, list[str]] = {}
    for module, path in _sources().items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                homes.setdefault(node.name, []).append(module)
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}
