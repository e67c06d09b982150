"""Command line: ``python -m calibnb run|sweep|prune|fetch|posthoc|calibrate|apply``.

    python -m calibnb run nbs/train.md -p loss dual_focal_loss -p gamma 5 [-f params.yaml] [--out DIR]
    python -m calibnb sweep configs/dfl_table1.yaml [--executor inprocess|local|slurm] [--dry-run]
    python -m calibnb prune configs/fashion_mnist_cpu.yaml
    python -m calibnb fetch fashion-mnist      # what `make data` runs: find or fetch the data
    python -m calibnb posthoc configs/studies/cifar_posthoc.yaml   # the post-hoc study (calibnb.runs.posthoc)
    python -m calibnb calibrate val.npz [--test test.npz] --out report/   # choose a calibrator for your model
    python -m calibnb apply report/calibrator.json test.npz --out probs.npy  # and apply it

``calibrate`` is :func:`calibnb.calibrate` on a user's files (:func:`calibnb.user_files.read_predictions`:
``.npz`` with ``logits`` — or ``probs`` with ``--probs`` — and ``labels``; ``.npy`` logits with a
``--labels`` file; ``.pt`` tensors, loaded weights-only); everything is read and checked before
the first fit, and the report folder is written only once every fit has succeeded.
``apply`` writes the calibrated probabilities of a saved calibrator as float64 ``.npy``.

``-p KEY VALUE`` values are read as YAML 1.2 scalars (``5`` is an int, ``0.5`` a float, ``true`` a
bool, ``010`` is 10 and ``2:30`` a string); ``-y`` takes a YAML mapping as a string and ``-f`` a
YAML file; every one is read by :mod:`calibnb.runs.strict_yaml` (a duplicate key, an anchor or
alias is refused). Later options override earlier ones. Without ``--out`` a run goes to
``runs/<calibnb.runs.run_name(...)>`` of its canonical parameters, so a run has one folder however
its parameters were spelled. A folder that holds another run is refused; ``--force`` replaces it
once the new run has succeeded. ``prune`` applies a sweep file's ``select`` section
(``{by, params, metric}`` of :func:`calibnb.runs.select_by_validation`) with
:func:`calibnb.runs.prune_unselected`.

A mistake of the user (an unknown or mistyped parameter, a bad file, a failing notebook cell, a
failed run of a sweep, a folder that cannot be written) prints one line ``error: …`` on stderr and
exits with status 2; Ctrl-C or SIGTERM prints ``error: interrupted`` and exits with 130 (143),
after every temporary file was removed; ``--debug`` shows the traceback.
``run`` checks the parameters against the notebook's ``parameters`` cell before anything runs
(:func:`calibnb.runs.parameters.check_parameters`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from pathlib import Path

import yaml


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibnb", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute one notebook with parameters")
    run.add_argument("notebook", type=Path)
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("KEY", "VALUE"), help="one parameter (value parsed as YAML)")
    run.add_argument("-y", "--yaml", action="append", default=[], help="parameters as a YAML mapping")
    run.add_argument("-f", "--file", action="append", default=[], type=Path,
                     help="parameters from a YAML file")
    run.add_argument("--out", type=Path, help="the run folder (default runs/<run name>)")
    run.add_argument("--root", type=Path, default=Path("runs"), help="parent of the default run folder")
    run.add_argument("--force", action="store_true",
                     help="replace a run folder that holds another run, once this run has succeeded")

    sweep = commands.add_parser("sweep", help="run every unfinished run of a sweep file")
    sweep.add_argument("config", type=Path)
    sweep.add_argument("--executor", choices=["inprocess", "local", "slurm"])
    sweep.add_argument("--dry-run", action="store_true", help="list the runs, run nothing")

    prune = commands.add_parser(
        "prune", help="reduce the runs that lose the sweep's validation selection to their validation part"
    )
    prune.add_argument("config", type=Path, help="a sweep file with a 'select' section")
    prune.add_argument("--dry-run", action="store_true", help="list what would be pruned, delete nothing")

    fetch = commands.add_parser(
        "fetch", help="find each data set where load_dataset looks, else fetch it into the cache"
    )
    fetch.add_argument("names", nargs="+", metavar="NAME")

    posthoc = commands.add_parser(
        "posthoc", help="fit every calibrator on the published CIFAR outputs of a study file"
    )
    posthoc.add_argument("config", type=Path)
    posthoc.add_argument("-j", "--jobs", type=int, default=len(os.sched_getaffinity(0)),
                         help="runs at once, one process each (default: the usable cores)")

    calibrate = commands.add_parser(
        "calibrate", help="cross-validate every calibrator on your model's logits, choose one, write a report")
    calibrate.add_argument("logits", type=Path, metavar="LOGITS",
                           help="calibration logits: .npz (logits, labels), .npy (with --labels) or .pt")
    calibrate.add_argument("--labels", type=Path, help="the labels of LOGITS, if it holds none (.npy, .npz, .pt)")
    calibrate.add_argument("--test", type=Path, metavar="TEST_LOGITS", help="test logits, scored but never chosen by")
    calibrate.add_argument("--test-labels", type=Path, help="the labels of TEST_LOGITS, if it holds none")
    calibrate.add_argument("--probs", action="store_true",
                           help="the files hold probabilities ('probs' in an .npz), not logits: use their log")
    calibrate.add_argument("--criterion", default="nll", choices=["nll", "ece", "adaece", "brier"],
                           help="the metric that chooses (default: nll)")
    calibrate.add_argument("--folds", type=int, default=5, help="cross-validation folds (default: 5)")
    calibrate.add_argument("--seed", type=int, default=0, help="the seed of the folds (default: 0)")
    calibrate.add_argument("--calibrators", metavar="NAMES",
                           help="comma-separated, of uncalibrated,ts,ets,fts,histogram,isotonic,spline (default: all)")
    calibrate.add_argument("--out", type=Path, required=True, metavar="DIR", help="the report folder")

    apply = commands.add_parser("apply", help="apply a saved calibrator to logits: calibrated probabilities as .npy")
    apply.add_argument("calibrator", type=Path, metavar="CALIBRATOR.json")
    apply.add_argument("logits", type=Path, metavar="LOGITS", help=".npz (logits), .npy or .pt")
    apply.add_argument("--probs", action="store_true", help="LOGITS holds probabilities: use their log")
    apply.add_argument("--out", type=Path, required=True, metavar="PROBS.npy", help="where the probabilities go")
    return parser


def _mapping(text: str, what: str) -> dict:
    from calibnb.runs.strict_yaml import load_yaml

    data = load_yaml(text, what)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a YAML mapping, got {data!r}"[:200])
    return data


def _print_lines(lines) -> int:
    """Print each line of ``lines()`` as it is produced."""
    for line in lines():
        print(line)
    return 0


def _user_errors() -> tuple:
    """The errors a user causes (a bad argument, file, parameter or notebook cell): reported as
    one line, not a traceback.

    The error classes of papermill, the data fetch and the sweeps are taken from their modules
    only where those were imported (an error of a class cannot be raised before its module is
    loaded), so that a bad file given to ``calibrate`` is reported without importing them."""
    errors = [ValueError, TypeError, OSError, yaml.YAMLError, FloatingPointError]
    for module, name in (("papermill.exceptions", "PapermillExecutionError"), ("calibnb.data.fetch", "FetchError"),
                         ("calibnb.runs.sweep", "RunsFailed")):
        if module in sys.modules:
            errors.append(getattr(sys.modules[module], name))
    return tuple(errors)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is so that every ``finally`` (temporary files, locks,
    staging folders, worker pools) runs, as for Ctrl-C."""


def _terminate(signum, frame):
    raise Terminated()


def _import(*modules: str) -> None:
    """Import ``modules`` with Ctrl-C and SIGTERM held until they are loaded, then act on them.

    A signal handled in the middle of a compiled extension's import can abort the process
    (importing torch, pybind11 turns the ``KeyboardInterrupt`` into ``std::terminate``), or,
    inside an ``exec`` of a string (scipy's array-API shim does one), leave CPython set to kill
    itself with SIGINT at exit whatever ``main`` returns; held, it becomes ``error: interrupted``
    once the imports are done (a second or two at most). A Ctrl-C the shell ignores stays ignored."""
    held: list[int] = []
    hold = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig, handler in hold.items():
        if handler not in (signal.SIG_IGN, None):
            signal.signal(sig, lambda signum, frame: held.append(signum))
    try:
        for module in modules:
            importlib.import_module(module)
    finally:
        for sig, handler in hold.items():
            signal.signal(sig, handler)
    if signal.SIGTERM in held:
        raise Terminated()
    if held:
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the command; a user's mistake prints ``error: …`` on stderr and returns 2 (the
    traceback only with ``--debug``); Ctrl-C returns 130 and SIGTERM 143."""
    args = _parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _command(args)
    except KeyboardInterrupt as interrupt:
        if args.debug:
            raise
        print("error: interrupted" + (" (SIGTERM)" if isinstance(interrupt, Terminated) else ""), file=sys.stderr)
        return 143 if isinstance(interrupt, Terminated) else 130
    except _user_errors() as error:
        if args.debug:
            raise
        if getattr(error, "ename", None) == "KeyboardInterrupt":  # Ctrl-C reached the notebook's kernel first
            print("error: interrupted", file=sys.stderr)
            return 130
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)


def _one_line(error: BaseException) -> str:
    evalue = getattr(error, "evalue", None)  # a notebook cell failed (papermill)
    if evalue is not None:
        return f"the notebook failed in cell {error.exec_count}: {error.ename}: {_first(evalue)}"
    if isinstance(error, OSError) and error.strerror:  # read-only, disk full, not a folder, ...
        where = " ".join(repr(str(f)) for f in (error.filename, error.filename2) if f)
        return f"{error.strerror}: {where}" if where else error.strerror
    return _first(str(error)) or type(error).__name__


def _first(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0] if text else ""


def _command(args) -> int:
    if args.command == "fetch":
        import logging

        _import("calibnb.data")
        from calibnb.data import fetch_dataset

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        return _print_lines(lambda: (f"{name}: {fetch_dataset(name)}" for name in args.names))

    if args.command == "calibrate":
        return _calibrate(args)

    if args.command == "apply":
        return _apply(args)

    if args.command == "posthoc":
        _import("calibnb.runs.posthoc")
        from calibnb.runs.posthoc import posthoc

        return _print_lines(lambda: map(str, posthoc(args.config, jobs=args.jobs)))

    _import("calibnb.runs", "papermill", "jupyter_client.manager")
    from calibnb import runs

    if args.command == "run":
        from calibnb.runs.strict_yaml import load_yaml, read_yaml

        params: dict = {}
        for path in args.file:
            params.update(read_yaml(path))
        for text in args.yaml:
            params.update(_mapping(text, "-y"))
        for key, value in args.parameter:
            params[key] = load_yaml(value, f"-p {key}")
        if args.out is None:
            canonical, declared = runs.canonical_parameters(args.notebook, params)
            args.out = args.root / runs.run_name(canonical, declared)
        print(runs.execute(args.notebook, params, args.out, force=args.force))
        return 0

    if args.command == "prune":
        for folder in runs.prune_sweep(args.config, dry_run=args.dry_run):
            print(f"{'would prune' if args.dry_run else 'pruned'}  {folder}")
        return 0

    plan = runs.plan(args.config)
    for params, folder, done in plan:
        print(f"{'done' if done else 'todo'}  {folder}")
    if not args.dry_run:
        runs.sweep(args.config, executor=args.executor)
    return 0


def _quiet_spin_waits() -> None:
    """Short OpenMP spin-waits (as ``make book`` sets them), before torch or scikit-learn loads libgomp.

    Focal temperature scaling's compiled kernel runs many short parallel regions; with libgomp's
    default spin-wait, on a machine busy with other work each region waits for a descheduled
    thread, and the same ``calibrate`` on 5,000 CIFAR-100 logits took from 8 s to 80 s on the
    2-core machine; with 1000 it stays near the unloaded time. A value the user set is kept."""
    os.environ.setdefault("GOMP_SPINCOUNT", "1000")


def _calibrate(args) -> int:
    _quiet_spin_waits()
    from calibnb.user_files import read_predictions  # numpy only: a bad file is refused at once

    if args.test_labels is not None and args.test is None:
        raise ValueError("--test-labels needs --test")
    logits, labels = read_predictions(args.logits, args.labels, probs=args.probs)
    test = (None, None) if args.test is None else read_predictions(args.test, args.test_labels, probs=args.probs,
                                                                   labels_option="--test-labels")
    if test[0] is not None and test[0].shape[1] != logits.shape[1]:
        raise ValueError(f"{args.test}: {test[0].shape[1]} classes, but {args.logits} has {logits.shape[1]}")
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"{args.out}: exists and is not a folder")
    _import("matplotlib")
    import matplotlib

    matplotlib.use("Agg")  # figures go to files; no display is needed or opened
    _import("calibnb.calibrate_model")
    from calibnb.calibrate_model import calibrate

    result = calibrate(logits, labels, *test, calibrators=args.calibrators, criterion=args.criterion,
                       folds=args.folds, seed=args.seed)
    folder = result.save(args.out)
    print(f"chosen: {result.chosen}. {result.reason}")
    print(f"report: {folder / 'report.html'}")
    return 0


def _apply(args) -> int:
    _quiet_spin_waits()
    _import("calibnb.calibration.persist")
    import numpy as np

    from calibnb.atomic import atomic_path
    from calibnb.calibration.persist import load_calibrator
    from calibnb.user_files import read_predictions

    if args.out.suffix != ".npy":
        raise ValueError(f"{args.out}: the probabilities are written as .npy; name the file *.npy")
    calibrator = load_calibrator(args.calibrator)
    logits, _ = read_predictions(args.logits, probs=args.probs, need_labels=False)
    if logits.shape[1] != calibrator.n_classes_:
        raise ValueError(f"{args.logits}: {logits.shape[1]} classes, but {args.calibrator} was fitted on "
                         f"{calibrator.n_classes_}")
    probs = calibrator.predict_proba(logits)
    with atomic_path(args.out) as tmp, open(tmp, "wb") as handle:
        np.save(handle, probs, allow_pickle=False)
    print(f"{args.out}: {probs.shape[0]} x {probs.shape[1]} calibrated probabilities "
          f"({type(calibrator).__name__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
