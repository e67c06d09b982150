"""A run folder is a record, not a scratch pad.

A run's identity, its canonical parameters (:func:`calibnb.runs.parameters.canonical_parameters`),
goes into ``params.yaml`` before anything else, and from then on the folder belongs to that run:

- a run with *other* parameters asked to write into it is refused by name before anything is
  written (``force=True``, the command line's ``--force``, runs it in a hidden staging folder
  beside it instead and replaces the old folder only once the new run has succeeded);
- a folder that holds files but no ``params.yaml`` is not a run folder and is refused the same way;
- one process at a time works in a folder: it holds an exclusive lock (``flock``) on the folder
  while it runs, which the kernel releases however the process ends, so a second run into the
  same folder is refused instead of mixing the two;
- the hidden temporaries of :mod:`calibnb.atomic` left by a killed run (SIGKILL runs no cleanup)
  are removed when the next run takes the lock, as are stale staging folders.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..atomic import write_json, write_text
from .naming import fingerprint, identity
from .strict_yaml import dump_yaml, read_yaml

PARAMS_FILE = "params.yaml"
#: The hidden files a killed writer may leave: :func:`calibnb.atomic.atomic_path`'s temporaries.
TEMPORARY_GLOB = ".*.tmp*"


def stored_parameters(run_dir: str | os.PathLike) -> dict | None:
    """The parameters in ``run_dir/params.yaml`` (read strictly), or None when there is none."""
    path = Path(run_dir) / PARAMS_FILE
    return read_yaml(path) if path.exists() else None


def differences(old: dict, new: dict, defaults: dict | None = None) -> list[str]:
    """``"key: old -> new"`` for every identity parameter in which two runs differ (values equal to
    ``defaults`` count as absent, numbers compare by value)."""
    if fingerprint(old, defaults) == fingerprint(new, defaults):
        return []
    defaults = defaults or {}
    old, new = ({**defaults, **identity(p)} for p in (old, new))
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in sorted(set(old) | set(new))
            if fingerprint({k: old.get(k)}) != fingerprint({k: new.get(k)})]


@contextmanager
def run_folder(out_dir: str | os.PathLike, params: dict, defaults: dict | None = None,
               force: bool = False, version: dict | None = None):
    """Yield the folder a run with canonical ``params`` writes into, holding its lock.

    ``out_dir`` itself when it is new, empty, or already this run's (same identity: a rerun or a
    resume, whose execution keys such as ``device`` may differ); refused (``ValueError`` naming the
    folder and the parameters that differ) when it holds another run or files of no run, unless
    ``force``: then a staging folder beside it, moved over ``out_dir`` when the block succeeds and
    deleted when it fails. ``params.yaml`` (and ``version.json`` when ``version`` is given) is
    written first. Stale temporaries in the folder are removed once the lock is held.
    """
    out_dir = Path(out_dir).resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"run folder {out_dir} is a file, not a folder")
    stored = stored_parameters(out_dir) if out_dir.is_dir() else None
    if stored is not None:
        conflict = differences(stored, params, defaults)
        reason = f"holds another run (its {PARAMS_FILE} differs: {'; '.join(conflict)})" if conflict else None
    else:
        foreign = out_dir.is_dir() and any(out_dir.iterdir())
        reason = f"holds files but no {PARAMS_FILE}: it is not a run folder" if foreign else None
    if reason and not force:
        raise ValueError(f"run folder {out_dir} {reason}; use another folder, or --force (force=True) to "
                         "replace it once the new run has succeeded")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out_dir)
    target = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent)) if reason else out_dir
    try:
        target.mkdir(exist_ok=True)
        with folder_lock(target):
            if target == out_dir:
                remove_temporaries(out_dir)
            write_text(target / PARAMS_FILE, dump_yaml({k: v for k, v in params.items() if k != "out_dir"}))
            if version is not None:
                write_json(target / "version.json", version)
            yield target
        if target != out_dir:
            with folder_lock(out_dir):
                replace_folder(target, out_dir)
    finally:
        if target != out_dir and target.exists():
            shutil.rmtree(target, ignore_errors=True)


@contextmanager
def folder_lock(folder: Path):
    """Hold an exclusive ``flock`` on ``folder``; refuse (``ValueError``) if another process holds it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"run folder {folder} is in use by another process (a run is writing it); "
                             "wait for it or use another folder") from None
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_temporaries(folder: Path) -> list[Path]:
    """Delete the hidden temporaries a killed writer left in ``folder`` (call with its lock held)."""
    stale = [p for p in folder.glob(TEMPORARY_GLOB) if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def remove_leftovers(folder: Path) -> None:
    """Remove the temporaries in a finished run's ``folder`` unless a living process holds it."""
    try:
        with folder_lock(folder):
            remove_temporaries(folder)
    except (ValueError, OSError):
        pass  # in use, or gone


def remove_stale_staging(out_dir: Path) -> None:
    """Delete the staging folders of ``out_dir`` that no living process holds. A replaced record
    set aside by a replacement that was killed half-way goes back to ``out_dir`` first."""
    if not out_dir.exists():
        for aside in sorted(out_dir.parent.glob(f".{out_dir.name}.staging-replaced-*"))[:1]:
            os.replace(aside, out_dir)
    for folder in out_dir.parent.glob(f".{out_dir.name}.staging-*"):
        try:
            with folder_lock(folder):
                shutil.rmtree(folder)
        except (ValueError, OSError):
            pass  # in use by a living run, or already gone


def replace_folder(new: Path, old: Path) -> None:
    """Put folder ``new`` where ``old`` is: ``old`` is renamed aside first, then deleted, so at
    every moment one complete folder exists under one of the two names."""
    aside = Path(tempfile.mkdtemp(prefix=f".{old.name}.staging-replaced-", dir=old.parent))
    os.replace(old, aside)  # an empty directory target is replaced atomically
    os.replace(new, old)
    shutil.rmtree(aside, ignore_errors=True)
