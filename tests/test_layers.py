"""The package's layers (``calibnb/__init__.py``): every module imports only from its own layer
or the layers above it, and no two modules import each other, directly or around a cycle."""

import ast
from pathlib import Path

import calibnb
from conftest import REPO

PACKAGE = REPO / "calibnb"
LAYERS = [
    {"_validation", "_progress", "_threads", "atomic"},
    {"user_files"},
    {"metrics", "models", "data", "paper_tables"},
    {"losses", "calibration"},
    {"toy", "synthetic"},
    {"train"},
    {"theory", "runs"},
    {"analysis"},
    {"plots", "plots_simplex", "plots_theory", "explorable"},
    {"calibrate_model"},
    {"__main__", "__init__"},
]
LEVEL = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def unit(path: Path) -> str:
    """The layer unit of a file: its top-level module or subpackage."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_units(path: Path) -> set[str]:
    units, rel = set(), path.relative_to(PACKAGE).parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[:-1])[: len(rel) - node.level]
                parts = base + (node.module.split(".") if node.module else [])
                names = parts[:1] if parts else [alias.name for alias in node.names]
            elif (node.module or "").split(".")[0] == "calibnb":
                parts = node.module.split(".")[1:]
                names = parts[:1] if parts else [alias.name for alias in node.names]
            else:
                continue
            units.update(name.removesuffix(".py") for name in names)
        elif isinstance(node, ast.Import):
            units.update(a.name.split(".")[1] for a in node.names if a.name.startswith("calibnb."))
    return units - {unit(path)}


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        graph.setdefault(unit(path), set()).update(imported_units(path))
    return graph


def test_every_unit_has_a_layer():
    assert set(import_graph()) == set(LEVEL)


def test_imports_go_up_the_layers_only():
    wrong = [(a, b) for a, deps in import_graph().items() for b in deps if LEVEL[b] > LEVEL[a]]
    assert not wrong, f"imports from a lower layer: {wrong}"


def test_no_import_cycle():
    graph = import_graph()
    state: dict[str, str] = {}

    def visit(node, path):
        state[node] = "open"
        for dep in graph.get(node, ()):
            assert state.get(dep) != "open", f"import cycle: {' -> '.join(path + [dep])}"
            if dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [node])


def test_the_layers_are_the_ones_the_package_documents():
    block = calibnb.__doc__.split("::")[-1].splitlines()
    names = [line.strip().split("  ")[0] for line in block if line.startswith("    ") and line[4] != " "]
    rows = [set(row.split(", ")) for row in names if not row.startswith("nbs/")]
    assert rows == LAYERS[:-1] + [{"__main__"}]
