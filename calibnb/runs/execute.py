"""Run one notebook with parameters: jupytext (text notebook → ipynb) then papermill.

A run's folder (a record: :mod:`calibnb.runs.record`) receives ``params.yaml``
(the run's canonical parameters), ``version.json`` (calibnb version and git commit of the code) and
the executed notebook; the notebook itself writes the
results (``metrics.json`` last, so a folder without it is an unfinished run). Every file is
written atomically. If the notebook raises, the executed copy is kept as ``failed.ipynb`` for
inspection and the error is re-raised; ``metrics.json`` is then absent, so a sweep reruns it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import calibnb

from ..atomic import atomic_path
from .parameters import canonical_parameters, canonical_training_parameters, training_defaults
from .record import run_folder

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
    force: bool = False,
) -> Path:
    """Execute ``notebook`` (a jupytext text notebook or an ``.ipynb``) into ``out_dir``.

    ``params`` are checked against the notebook's ``parameters`` cell and put in canonical form
    (:func:`calibnb.runs.canonical_parameters`: a name the notebook does not declare, a
    value of the wrong type, or one parameter spelled two ways with two values is refused before
    anything is written); papermill injects them after that cell, with ``out_dir`` (an absolute
    path) so the notebook knows where to write. The folder is a record
    (``calibnb.runs.record.run_folder()``): a folder holding another run is refused unless
    ``force``, which replaces it only after the new run succeeded. The notebook runs with its own
    folder as working directory. Returns the run folder.
    """
    import jupytext
    import papermill

    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook {str(notebook)!r} does not exist")
    params, declared = canonical_parameters(notebook, params)  # before anything is written
    out_dir = Path(out_dir).resolve()
    with run_folder(out_dir, params, declared, force, code_version(notebook.parent)) as folder:
        executed, failed = folder / f"{notebook.stem}.ipynb", out_dir / "failed.ipynb"
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / f"{notebook.stem}.ipynb"
            jupytext.write(jupytext.read(notebook), source, fmt="ipynb")
            with atomic_path(executed) as target:
                try:
                    papermill.execute_notebook(
                        str(source),
                        str(target),
                        parameters={**params, "out_dir": str(folder)},
                        kernel_name=kernel_name,
                        progress_bar=False,
                        log_output=log_output,
                        cwd=str(notebook.parent.resolve()),
                        kernel_manager_class=_quiet_kernel_manager(),
                    )
                except papermill.PapermillExecutionError:
                    if out_dir.is_dir():
                        os.replace(target, failed)  # the executed cells, kept for inspection
                    raise
        (folder / "failed.ipynb").unlink(missing_ok=True)
    return out_dir


def _quiet_kernel_manager():
    """jupyter_client's kernel manager with the kernel's own log (not the cells' output, which
    papermill records) sent nowhere: on Ctrl-C, which reaches the kernel too, it would print a
    traceback of its interrupted reply beside calibnb's one ``error: interrupted`` line."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            return await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": subprocess.DEVNULL})

    return QuietKernelManager


def run_training(params: dict, out_dir: str | os.PathLike, force: bool = False) -> Path:
    """Train one run in this process, without the notebook: :func:`calibnb.train.train` itself.

    The run folder gets what :func:`execute` writes except the executed notebook: the same
    canonical ``params.yaml``, ``version.json`` and the trainer's artifacts (``metrics.json``
    last), under the same record rules. This is the runner for long CPU sweeps, where starting a
    kernel and drawing the notebook's figures for every run would cost more than the training.
    """
    from ..train import train

    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    params = canonical_training_parameters(params)  # refuse before writing anything
    out_dir = Path(out_dir).resolve()
    with run_folder(out_dir, params, training_defaults(), force, code_version(Path(__file__).parent)) as folder:
        train({**params, "progress": False, "out_dir": str(folder)})
    return out_dir


def is_pruned(run_dir: str | os.PathLike) -> bool:
    """True when the run is finished but ``prune`` removed its test part (``metrics.json`` without
    ``test``): it still counts for the validation selection, not for the tables."""
    from .schemas import read_run_metrics

    path = Path(run_dir) / FINISHED_MARKER
    return path.is_file() and "test" not in read_run_metrics(path)
