"""Project-wide checks that CI must enforce: lint, types, the public API, import direction
and no import cycles."""

from __future__ import annotations

import ast
import functools
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import replyparse

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "replyparse"

#: The core: what parses. It must never import the layers built on it.
CORE = [
    "errors.py", "events.py", "_scanner.py", "_scan_plans.py", "_delimiter.py", "_complete_scan.py", "parser.py", "transform.py", "tools.py",
    "coercion.py", "tokens.py", "model_folder.py", "_json_types.py", "_charset.py",
    "_regex_syntax.py", "_regex_tree.py", "_regex_analysis.py", "_regex_search.py", "_schema_ref.py", "_tool_names.py",
    "function_schema.py", "issues.py", "template", "content", "request", "_schema_walk.py",
    "_accumulator.py", "_values.py", "_recovery.py", "_regions.py", "_walk.py", "_machine.py", "_primed.py", "_oneshot.py", "_state.py",
]  # fmt: skip
OUTER = ("replyparse.templates", "replyparse.openai", "replyparse.anthropic", "replyparse.grammar",
         "replyparse.server",
         "replyparse.cli", "replyparse._cli", "replyparse.demo", "replyparse.batch",
         "replyparse.chat_template", "replyparse.integrations")  # fmt: skip


def test_public_api_is_sorted_and_importable() -> None:
    assert replyparse.__all__ == sorted(replyparse.__all__)
    for name in replyparse.__all__:
        assert hasattr(replyparse, name), name


#: How a module imports another, strongest first: at import time, inside a function (when
#: it runs), or only for the type checker (``if TYPE_CHECKING:``, never at run time).
TOP, LOCAL, TYPING = "top", "local", "type-checking"
_STRENGTH = (TOP, LOCAL, TYPING)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The names a statement imports, absolute; relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    # ``base.name``: the graph resolves it to a submodule, or else to ``base`` itself.
    return [f"{base}.{alias.name}" for alias in node.names]


def _imports(path: Path) -> dict[str, str]:
    """Every name ``path`` imports (resolved), with how: TOP, LOCAL or TYPING (the strongest)."""
    source = path.read_text(encoding="utf-8")
    return _imports_in(source, _module_name(path), path.name == "__init__.py")


def _imports_in(source: str, module: str, is_package: bool) -> dict[str, str]:
    found: dict[str, str] = {}

    def visit(node: ast.AST, how: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit_one(statement, TYPING)
                for statement in child.orelse:
                    visit_one(statement, how)
            else:
                visit_one(child, how)

    def visit_one(node: ast.AST, how: str) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported(node, module, is_package):
                if name:
                    found[name] = min(found.get(name, how), how, key=_STRENGTH.index)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            visit(node, LOCAL if how == TOP else how)
        else:
            visit(node, how)

    visit(ast.parse(source), TOP)
    return found


@functools.cache
def _import_graph() -> dict[str, dict[str, str]]:
    """Module -> {replyparse module it imports: how}. Importing a submodule is an edge to the
    submodule only: its package's ``__init__`` running first is not an import of it."""
    graph: dict[str, dict[str, str]] = {}
    for module, path in MODULES.items():
        edges: dict[str, str] = {}
        for name, how in _imports(path).items():
            target = name
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges[target] = min(edges.get(target, how), how, key=_STRENGTH.index)
        graph[module] = edges
    return graph


def _find_cycle(graph: dict[str, dict[str, str]], kinds: tuple[str, ...]) -> list[str] | None:
    """One import cycle over edges of these kinds (as a path back to its start), or None.

    Depth-first with an explicit stack: linear in the edges, no recursion limit."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        while stack:
            node = path[-1]
            for target in stack[-1]:
                if graph[node][target] not in kinds or target in done:
                    continue
                if target in path:
                    return [*path[path.index(target) :], target]
                path.append(target)
                stack.append(iter(sorted(graph[target])))
                break
            else:
                stack.pop()
                done.add(path.pop())
    return None


def test_every_module_is_in_the_core_or_an_outer_layer() -> None:
    """A module in neither list would escape the import-direction check (the core could
    reach an outer layer through it)."""
    outer = {name.removeprefix("replyparse.") for name in OUTER}
    unplaced = [
        path.name
        for path in sorted(SOURCE.iterdir())
        if (path.suffix == ".py" or path.is_dir())
        and not path.name.startswith("__")
        and path.name not in CORE
        and path.stem not in outer
    ]
    assert unplaced == [], f"add each to CORE or OUTER in tests/test_project.py: {unplaced}"


@pytest.mark.parametrize("part", CORE)
def test_the_core_never_imports_outer_layers(part: str) -> None:
    target = SOURCE / part
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
    for file in files:
        outer = sorted(name for name in _imports(file) if name.startswith(OUTER))
        assert not outer, f"{file.relative_to(ROOT)} imports {outer}"


def test_grammar_imports_nothing_from_openai() -> None:
    """The grammar builder and the OpenAI layer are siblings over the request layer
    (``replyparse.request``): what both need about a request lives there, so neither reaches
    sideways into the other, not even inside a function."""
    files = sorted((SOURCE / "grammar").rglob("*.py"))
    sideways = {
        str(file.relative_to(ROOT)): sorted(
            name for name in _imports(file) if name.startswith("replyparse.openai")
        )
        for file in files
    }
    assert {file: names for file, names in sideways.items() if names} == {}


def _parser_privates() -> set[str]:
    """The private methods and attributes of ``ResponseParser`` (``parser.py``)."""
    tree = ast.parse((SOURCE / "parser.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ResponseParser":
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Attribute) and ast.unparse(item.value) == "self":
                    names.add(item.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_module_reads_a_parser_private() -> None:
    """Only ``parser.py`` (and ``_regions.py``, whose ``RegionSteps`` is a part of
    ``ResponseParser``) touches the parser's private state; the whole-text paths go through
    its "whole texts" methods (``PrimedParser``), everything else through the public API."""
    privates = _parser_privates()
    assert {"_state", "_run", "_values"} <= privates  # the finder sees them
    found = []
    for file in sorted(SOURCE.rglob("*.py")):
        if file.name in ("parser.py", "_regions.py"):
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in privates
                and ast.unparse(node.value) not in ("self", "cls")
            ):
                found.append(f"{file.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_no_import_cycles() -> None:
    """No module imports, directly or through others, one that imports it back: neither at
    import time nor hidden in a function body. ``if TYPE_CHECKING:`` imports may close a
    cycle (annotations only: they never run), so they are not edges here."""
    graph = _import_graph()
    cycle = _find_cycle(graph, (TOP, LOCAL))
    assert cycle is None, (
        "import cycle: "
        + " -> ".join(
            f"{module} ({graph[module][target]} import)"
            for module, target in itertools.pairwise(cycle)
        )
        + f" -> {cycle[-1]}"
    )


def test_the_cycle_finder_sees_local_imports_and_skips_type_checking() -> None:
    graph = {"a": {"b": TOP}, "b": {"c": LOCAL}, "c": {"a": TYPING, "b": TOP}}
    assert _find_cycle(graph, (TOP, LOCAL)) == ["b", "c", "b"]
    assert _find_cycle({"a": {"b": TOP}, "b": {"a": TYPING}}, (TOP, LOCAL)) is None
    assert _find_cycle({"a": {"b": TOP}, "b": {"a": TYPING}}, _STRENGTH) == ["a", "b", "a"]
    # Relative imports resolve; a function-local import is LOCAL; TYPE_CHECKING is TYPING.
    assert _imports_in("from ._base import x", "p.q", False) == {"p._base.x": TOP}
    assert _imports_in("from .. import y", "p.q.r", True) == {"p.q.y": TOP}
    source = "import a\nif TYPE_CHECKING:\n    import b\ndef f():\n    import c\n    import a\n"
    assert _imports_in(source, "m", False) == {"a": TOP, "b": TYPING, "c": LOCAL}
    assert _module_name(SOURCE / "content" / "__init__.py") == "replyparse.content"
    # ``from package import submodule`` is an edge to the submodule, not to the package.
    edges = _import_graph()["replyparse.grammar._build"]
    assert "replyparse.grammar._ir" in edges and "replyparse.grammar" not in edges


def _tool(name: str) -> list[str]:
    executable = shutil.which(name, path=str(Path(sys.executable).parent))
    if executable is None:
        pytest.skip(f"{name} is not installed")
    return [executable]


def test_ruff() -> None:
    result = subprocess.run(
        [*_tool("ruff"), "check", "src", "tests", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # about 40 s of CPU on a cold cache; developers run mypy itself
def test_mypy_strict_on_src_and_scripts() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "src/replyparse", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
