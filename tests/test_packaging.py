"""The package installs anywhere: its version is written once, its declared dependencies are what
its code imports, the requirement files the Makefile installs from pin exactly those names, and
the wheel built by ``python -m build`` installs and works in a fresh virtual environment with its
runtime dependencies alone (the slow test).

The release workflow that publishes the wheel is held to its steps by tests/test_release.py.
"""

import ast
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import calibnb
from conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
PACKAGE = REPO / "calibnb"

#: Import names that are not their distribution's name (the others are, up to canonicalisation).
DISTRIBUTION_OF = {"sklearn": "scikit-learn", "yaml": "pyyaml", "mpl_toolkits": "matplotlib", "PIL": "pillow"}
#: Imported only inside functions, for a feature that needs an extra: import name -> the extra.
EXTRA_OF = {
    "papermill": "sweep", "jupytext": "sweep", "nbformat": "sweep", "jupyter_client": "sweep",
    "submitit": "sweep", "transformers": "text",
}
#: Imported only inside functions and inside ``try: ... except ImportError``, with a fallback or
#: an error that says what to install; declared nowhere on purpose.
OPTIONAL = {
    "torchvision": "downloads CIFAR/SVHN when it imports (no CPU build matches the pinned torch)",
    "ipywidgets": "tqdm's notebook bars where Jupyter widgets are installed, else the text bar",
}
#: Runtime dependencies that calibnb never imports itself, and who imports them.
INDIRECT = {"jinja2": "pandas' Styler (calibnb.analysis.tables.styled)"}


def names(requirements) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def distribution(import_name: str) -> str:
    return canonicalize_name(DISTRIBUTION_OF.get(import_name, import_name))


def third_party_imports() -> list[tuple[str, str, bool, bool]]:
    """``(module path, top-level import name, inside a function, inside try/except ImportError)``
    for every absolute import of a name outside the standard library and calibnb."""
    found = []

    def catches_import_error(node: ast.Try) -> bool:
        caught = [h.type for h in node.handlers]
        flat = [e for c in caught for e in (c.elts if isinstance(c, ast.Tuple) else [c])]
        return any(isinstance(e, ast.Name) and e.id in ("ImportError", "ModuleNotFoundError") for e in flat)

    def walk(node, path, in_function, in_try):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                tops = [alias.name.split(".")[0] for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0:
                tops = [child.module.split(".")[0]]
            else:
                tops = []
            for top in tops:
                if top not in sys.stdlib_module_names and top != "calibnb":
                    found.append((path, top, in_function, in_try))
            walk(child, path,
                 in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                 in_try or (isinstance(child, ast.Try) and catches_import_error(child)))

    for file in sorted(PACKAGE.rglob("*.py")):
        walk(ast.parse(file.read_text(), str(file)), str(file.relative_to(REPO)), False, False)
    return found


def pins(file: str) -> dict[str, str]:
    """``name -> version`` of a requirement or constraints file (every line ``name==version``)."""
    out = {}
    for line in (REPO / file).read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{file}: {line} is not pinned"
        name = canonicalize_name(requirement.name)
        assert out.get(name, spec.version) == spec.version, f"{file} pins {name} twice, differently"
        out[name] = spec.version
    return out


def test_the_version_is_written_once_in_calibnb_init():
    assert "version" not in PROJECT and PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "calibnb.__version__"}
    assert str(Version(calibnb.__version__)) == calibnb.__version__  # PEP 440, normalised
    # setuptools reads the attribute without importing calibnb: it must stay a literal.
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    (assignment,) = [n for n in tree.body if isinstance(n, ast.Assign)
                     and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["__version__"]]
    assert isinstance(assignment.value, ast.Constant) and assignment.value.value == calibnb.__version__


def test_every_third_party_import_is_a_declared_dependency():
    runtime = names(PROJECT["dependencies"])
    extras = {extra: names(reqs) for extra, reqs in PROJECT["optional-dependencies"].items()}
    imports = third_party_imports()
    assert {"numpy", "torch", "sklearn", "yaml", "papermill", "torchvision"} <= {top for _, top, _, _ in imports}
    wrong = []
    for path, top, in_function, in_try in imports:
        if distribution(top) in runtime:
            continue
        if top in EXTRA_OF:
            if not in_function:
                wrong.append(f"{path}: {top} (extra {EXTRA_OF[top]!r}) is imported at module level")
            elif distribution(top) not in extras[EXTRA_OF[top]]:
                wrong.append(f"{path}: {top} is not in the {EXTRA_OF[top]!r} extra")
        elif top in OPTIONAL:
            if not (in_function and in_try):
                wrong.append(f"{path}: the optional {top} is imported outside a function's try/except ImportError")
        else:
            wrong.append(f"{path}: {top} is neither a runtime dependency nor in an extra")
    assert not wrong, "\n".join(wrong)


def test_every_runtime_dependency_is_imported_by_the_package():
    runtime = names(PROJECT["dependencies"])
    imported = {distribution(top) for _, top, _, _ in third_party_imports()}
    unused = runtime - imported - set(INDIRECT)
    assert not unused, f"declared runtime dependencies that calibnb never imports: {sorted(unused)}"
    assert not set(INDIRECT) & imported, "an INDIRECT dependency is imported: drop it from INDIRECT"
    for name in set(OPTIONAL):  # optional means declared nowhere
        assert all(distribution(name) not in names(reqs) for reqs in
                   [PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()]), name


def test_the_extras_are_the_book_the_sweeps_and_the_tests():
    extras = {extra: names(reqs) for extra, reqs in PROJECT["optional-dependencies"].items()}
    assert set(extras) == {"book", "sweep", "test", "text"}
    assert extras["text"] == {"transformers"} <= extras["test"]  # BERT; CI's tests run it
    assert {"jupyter-book", "jupytext", "papermill", "ipykernel"} <= extras["book"]
    assert {"submitit", "papermill", "jupytext", "ipykernel"} <= extras["sweep"]
    assert {"pytest", "hypothesis", "build"} <= extras["test"]
    runtime = names(PROJECT["dependencies"])
    assert not runtime & set().union(*extras.values()), "an extra repeats a runtime dependency"


def test_the_requirement_files_pin_exactly_the_declared_names():
    extras = {extra: names(reqs) for extra, reqs in PROJECT["optional-dependencies"].items()}
    runtime = names(PROJECT["dependencies"])
    assert set(pins("requirements.txt")) == runtime | extras["book"] | extras["sweep"]
    assert set(pins("requirements-test.txt")) == extras["test"]


def test_the_pins_satisfy_pyproject_and_agree_with_the_constraints():
    declared = {canonicalize_name(Requirement(r).name): Requirement(r).specifier
                for r in [*PROJECT["dependencies"], *sum(PROJECT["optional-dependencies"].values(), [])]}
    constraints = pins("constraints.txt")
    assert "calibnb" not in constraints  # `make freeze` excludes the editable install
    for file in ("requirements.txt", "requirements-test.txt"):
        for name, version in pins(file).items():
            assert declared[name].contains(version, prereleases=True), f"{file}: {name}=={version} breaks {declared[name]}"
            assert constraints.get(name) == version, f"{file} pins {name}=={version}, constraints.txt {constraints.get(name)}"
    assert set(declared) <= set(constraints), sorted(set(declared) - set(constraints))


def test_every_data_file_of_the_package_is_declared_package_data():
    """Files beside the code (the shipped CIFAR predictions that calibnb.data.load_predictions
    reads) reach the wheel only through [tool.setuptools.package-data]; the slow test checks the
    wheel itself."""
    declared = {path for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items()
                for pattern in patterns for path in (REPO / package.replace(".", "/")).glob(pattern)}
    data = {p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert any(p.suffix == ".npz" for p in data)
    assert data <= declared, f"not in [tool.setuptools.package-data]: {sorted(map(str, data - declared))}"


# --- the slow test: build, install into a fresh virtual environment, use ---------------------------------


def run(command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def index_options() -> list[str]:
    """The index options (``--extra-index-url`` and kin) that requirements.txt gives pip, so the
    fresh environment resolves torch from where `make install` did."""
    lines = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()]
    return [part for line in lines if line.startswith("-") for part in line.split()]


@pytest.mark.slow
def test_the_built_wheel_installs_alone_in_a_fresh_environment_and_works(tmp_path):
    version = calibnb.__version__
    dist = tmp_path / "dist"
    # `python -m build`: the sdist, then the wheel built from the unpacked sdist (as a release does)
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)])
    built = sorted(p.name for p in dist.iterdir())
    assert built == [f"calibnb-{version}-py3-none-any.whl", f"calibnb-{version}.tar.gz"], built
    wheel = dist / built[0]

    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())
        metadata = HeaderParser().parsestr(archive.read(f"calibnb-{version}.dist-info/METADATA").decode())
    with tarfile.open(dist / built[1]) as archive:
        sdist_metadata = HeaderParser().parsestr(archive.extractfile(f"calibnb-{version}/PKG-INFO").read().decode())
    assert metadata["Version"] == sdist_metadata["Version"] == version
    assert metadata["License-Expression"] == "MIT"
    required = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    assert {canonicalize_name(r.name) for r in required if r.marker is None} == names(PROJECT["dependencies"])
    assert set(metadata.get_all("Provides-Extra")) == set(PROJECT["optional-dependencies"])
    # every file of the package is in the wheel, and nothing else but the wheel's own metadata
    source = {p.relative_to(REPO).as_posix() for p in PACKAGE.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert source - files == set(), sorted(source - files)
    assert {f for f in files if not f.startswith(f"calibnb-{version}.dist-info/")} == source

    # a fresh virtual environment that sees nothing of this one
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # The runtime dependencies alone, at the versions `make install` pins, from the same index:
    # pip finds in its cache (or the machine's wheel folder) the wheels it installed there.
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel), "-c", str(REPO / "constraints.txt"),
         *index_options()], env=env, cwd=tmp_path)
    run([str(python), "-m", "pip", "check"], env=env, cwd=tmp_path)

    smoke = tmp_path / "wheel_smoke.py"  # run from outside the repository: no source tree on the path
    smoke.write_text((REPO / "tests" / "wheel_smoke.py").read_text())
    out = run([str(python), str(smoke), version], env=env, cwd=tmp_path).stdout
    assert re.search(rf"calibnb {re.escape(version)} from {re.escape(str(venv))}\S*/calibnb: ECE", out), out
    assert re.search(r"calibrate chose \w+ in [\d.]+ s", out), out
    print(out)  # with -s: the smoke test's timing of `python -m calibnb calibrate`
