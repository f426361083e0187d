"""The package layout (docs/architecture.md): irrun/'s top level holds only __init__, __main__, errors and the
stage folders; imports go down the stages and form no circle. The import graph is read from the sources
(every import, those inside functions included), so nothing is imported to check it."""
import ast
import functools
from pathlib import Path

import pytest

import irrun

PACKAGE = Path(irrun.__file__).parent
TOP_MODULES = {"__init__.py", "__main__.py", "errors.py"}
# Lowest first: a module may import its own floor and those below it, never one above.
FLOORS = [("irrun.errors", "irrun.ir"), ("irrun.ops",), ("irrun.engine",), ("irrun.tools",), ("irrun.scale",),
          ("irrun.cli",), ("irrun.__main__",)]
SIZE_LIMIT = 600  # lines; generated tables and op families in ops/ may be longer
SIZE_EXEMPT = ("irrun/ir/opset_tables.py", "irrun/ops/")


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every .py under `root` (a package's __init__ under the package's name)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package modules it imports. Importing a.b.c runs a/__init__ and a/b/__init__ first, so
    those count too, except the importing module's own enclosing packages (already being imported) and the
    root package, which Python always imports first."""
    modules = module_names(root, package)
    graph = {}
    for name, path in modules.items():
        own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own_package.split(".")[: len(own_package.split(".")) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module
                submodules = {f"{origin}.{alias.name}" for alias in node.names} & set(modules)
                targets.update(submodules)
                if len(submodules) < len(node.names):  # names defined in `origin` itself
                    targets.add(origin)
        edges = set()
        for target in targets:
            parts = target.split(".")
            for end in range(1, len(parts) + 1):
                prefix = ".".join(parts[:end])
                if prefix in modules and not (name == prefix or name.startswith(prefix + ".")) and (
                        prefix != package or target == package):
                    edges.add(prefix)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules, the first repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def floor(name: str) -> int | None:
    for index, prefixes in enumerate(FLOORS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return index
    return None


@functools.lru_cache(maxsize=1)
def irrun_import_graph() -> dict[str, set[str]]:
    """irrun's import graph, read once (seconds of parsing) for the tests below, which share an xdist worker."""
    return import_graph(PACKAGE, "irrun")


ON_IRRUNS_IMPORT_GRAPH = pytest.mark.xdist_group("test_layout-import-graph")


@ON_IRRUNS_IMPORT_GRAPH
def test_irrun_has_no_import_circle():
    assert find_cycle(irrun_import_graph()) is None


@ON_IRRUNS_IMPORT_GRAPH
def test_imports_only_go_down_the_stages():
    upward = sorted(f"{name} -> {target}" for name, targets in irrun_import_graph().items()
                    for target in targets if name != "irrun" and (target == "irrun" or floor(target) > floor(name)))
    assert upward == []


def test_top_level_holds_only_the_entry_points_errors_and_stage_folders():
    entries = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    folders = {name for name in entries if (PACKAGE / name).is_dir()}
    assert entries - folders == TOP_MODULES
    assert folders == {"ir", "ops", "engine", "tools", "scale", "cli"}
    assert all((PACKAGE / name / "__init__.py").exists() for name in folders)


def test_every_module_is_on_a_floor():
    assert [name for name in module_names(PACKAGE, "irrun") if name != "irrun" and floor(name) is None] == []


def test_no_module_over_the_size_limit():
    root = PACKAGE.parent
    long = [f"{path.relative_to(root)}: {len(path.read_text().splitlines())}" for path in PACKAGE.rglob("*.py")
            if not str(path.relative_to(root)).startswith(SIZE_EXEMPT)
            and len(path.read_text().splitlines()) > SIZE_LIMIT]
    assert long == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_circle_is_found(tmp_path):
    """Through a function-level import and through a package's __init__."""
    _write(tmp_path, {"__init__.py": "", "a.py": "from .b import x\n", "b.py": "def f():\n    from . import a\n"})
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.a", "pkg.b", "pkg.a"]
    _write(tmp_path, {"b.py": "x = 1\n", "sub/__init__.py": "from . import m\n", "sub/m.py": "",
                      "c.py": "from .sub.m import y\n", "sub/n.py": "from ..c import z\n"})
    (tmp_path / "sub/__init__.py").write_text("from . import m, n\n")
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.c", "pkg.sub", "pkg.sub.n", "pkg.c"]


def test_no_circle_in_a_layered_package(tmp_path):
    _write(tmp_path, {"__init__.py": "from .b import x\n", "a.py": "from .b import x\n", "b.py": "x = 1\n",
                      "sub/__init__.py": "", "sub/m.py": "from .. import a\nfrom . import n\n", "sub/n.py": ""})
    assert find_cycle(import_graph(tmp_path, "pkg")) is None
