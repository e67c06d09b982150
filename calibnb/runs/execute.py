"""Run one notebook with parameters: jupytext (text notebook → ipynb) then papermill.

A run's folder (DESIGN.md, "Experiments") receives ``params.yaml``, ``version.json`` (calibnb
version and git commit of the code) and the executed notebook; the notebook itself writes the
results (``metrics.json`` last, so a folder without it is an unfinished run). Every file is
written atomically. If the notebook raises, the executed copy is kept as ``failed.ipynb`` for
inspection and the error is re-raised; ``metrics.json`` is then absent, so a sweep reruns it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import yaml

import calibnb

from ..atomic import atomic_path, write_json, write_text
from .naming import identity
from .parameters import check_parameters, check_training_parameters

FINISHED_MARKER = "metrics.json"


def is_finished(run_dir: str | os.PathLike) -> bool:
    """True when the run folder holds its final ``metrics.json``."""
    return (Path(run_dir) / FINISHED_MARKER).is_file()


def code_version(where: str | os.PathLike = ".") -> dict:
    """calibnb's version and, when ``where`` is in a git checkout, its commit and dirtiness."""
    version = {"calibnb": calibnb.__version__}
    try:
        run = lambda *args: subprocess.run(  # noqa: E731
            ["git", *args], cwd=where, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        version["commit"] = run("rev-parse", "HEAD")
        version["dirty"] = bool(run("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def execute(
    notebook: str | os.PathLike,
    params: dict,
    out_dir: str | os.PathLike,
    kernel_name: str = "python3",
    log_output: bool = False,
) -> Path:
    """Execute ``notebook`` (a jupytext text notebook or an ``.ipynb``) into ``out_dir``.

    ``params`` are injected by papermill after the cell tagged ``parameters``, once
    :func:`calibnb.runs.parameters.check_parameters` has accepted them (a name the notebook does
    not declare, or a value of the wrong type, is refused before anything is written); ``out_dir``
    is added to them (as an absolute path) so the notebook knows where to write. The notebook runs
    with its own folder as working directory. Returns the run folder.
    """
    import jupytext
    import papermill

    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook {str(notebook)!r} does not exist")
    check_parameters(notebook, params)  # before anything is written or a kernel starts
    out_dir = Path(out_dir).resolve()
    refuse_changed_resume(out_dir, params)
    out_dir.mkdir(parents=True, exist_ok=True)
    # params.yaml records what the run computes; the folder it sits in is not part of it, so a
    # run folder can be moved (or committed) without naming the machine it ran on
    write_text(out_dir / "params.yaml", yaml.safe_dump(_without_out_dir(params), sort_keys=True))
    write_json(out_dir / "version.json", code_version(notebook.parent))
    params = {**params, "out_dir": str(out_dir)}
    executed, failed = out_dir / f"{notebook.stem}.ipynb", out_dir / "failed.ipynb"
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / f"{notebook.stem}.ipynb"
        jupytext.write(jupytext.read(notebook), source, fmt="ipynb")
        with atomic_path(executed) as target:
            try:
                papermill.execute_notebook(
                    str(source),
                    str(target),
                    parameters=params,
                    kernel_name=kernel_name,
                    progress_bar=False,
                    log_output=log_output,
                    cwd=str(notebook.parent.resolve()),
                )
            except papermill.PapermillExecutionError:
                os.replace(target, failed)  # the executed cells, kept for inspection
                raise
    failed.unlink(missing_ok=True)
    return out_dir


def run_training(params: dict, out_dir: str | os.PathLike) -> Path:
    """Train one run in this process, without the notebook: :func:`calibnb.train.train` itself.

    The run folder gets what :func:`execute` writes except the executed notebook: the same
    ``params.yaml``, ``version.json`` and the trainer's artifacts (``metrics.json`` last). This is
    the runner for long CPU sweeps, where starting a kernel and drawing the notebook's figures for
    every run would cost more than the training.
    """
    from ..train import train

    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    check_training_parameters(params)  # refuse before writing anything
    out_dir = Path(out_dir).resolve()
    refuse_changed_resume(out_dir, params)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir / "params.yaml", yaml.safe_dump(_without_out_dir(params), sort_keys=True))
    write_json(out_dir / "version.json", code_version(Path(__file__).parent))
    train({"progress": False, **params, "out_dir": str(out_dir)})
    return out_dir


def refuse_changed_resume(out_dir: Path, params: dict) -> None:
    """A run asked to ``resume`` in a folder whose stored ``params.yaml`` computes something else
    is refused, naming the parameters that differ: resuming would mix the old run's epochs with
    the new parameters. (Execution keys such as ``device`` may change.) To start over, use a new
    folder or ``resume: false``."""
    stored_file = out_dir / "params.yaml"
    if not params.get("resume") or not stored_file.is_file():
        return
    try:
        stored = yaml.safe_load(stored_file.read_text()) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"{stored_file} is not readable YAML: {error}") from None
    if not isinstance(stored, dict):
        raise ValueError(f"{stored_file} must hold a mapping of parameters")
    old, new = identity(stored), identity(_without_out_dir(params))
    differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if differ:
        changes = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in differ)
        raise ValueError(f"cannot resume the run in {out_dir}: its parameters differ ({changes}); "
                         "resume only the same run, or start a fresh one (a new folder or resume: false)")


def _without_out_dir(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "out_dir"}
