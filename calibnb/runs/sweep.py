"""Sweeps: expand a YAML grid into runs, skip the finished ones, run the rest on an executor.

A sweep file (``configs/*.yaml``)::

    notebook: nbs/train.md          # relative to the sweep file's repository root (see below)
    out_root: runs/dfl_table1       # one sub-folder per run, named by calibnb.runs.run_name
    params:                         # shared by every run
      epochs: 350
      recipe: mukhoti2020
    grid:                           # a grid, or a list of grids whose runs are pooled
      - dataset: [cifar10, cifar100]
        model: resnet50
        loss: [cross_entropy, focal_loss]
        seed: [1, 2, 3]
      - {dataset: cifar100, model: resnet50, loss: dual_focal_loss, gamma: 5, seed: [1, 2, 3]}
    runner: notebook                # notebook (default): papermill; train: calibnb.train.train
    executor:                       # optional defaults for `sweep(..., executor=...)`
      name: slurm                   # inprocess | local | slurm
      timeout_min: 2880
      slurm_partition: gpu
      gpus_per_node: 1

In a grid, a list is a dimension and a scalar is fixed; each grid's runs are the Cartesian
product of its lists. Relative ``notebook`` and ``out_root`` paths are resolved against the
folder that holds ``configs/`` (the repository root) when the file lives in ``configs/`` or a
folder below it (``configs/studies/``), else against the file's own folder.

Runners: ``notebook`` executes the notebook with papermill (:func:`execute`), so each run
folder holds its executed notebook; ``train`` calls :func:`calibnb.train.train` directly
(:func:`run_training`): the same artifacts without the notebook, and no kernel start or figures
per run, for long sweeps of short CPU runs.

Executors: ``inprocess`` runs one notebook after another in this process; ``local`` and
``slurm`` go through submitit (local processes, or a Slurm array job on a cluster). Runs are
independent and each writes its ``metrics.json`` last, atomically, so interrupting a sweep
loses no finished run: the next call skips them and reruns only the unfinished ones.
"""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path

from .execute import execute, is_finished, is_pruned, run_training
from .parameters import check_parameters, declared_parameters
from .record import remove_leftovers
from .strict_yaml import read_yaml
from .naming import run_name
from .._validation import did_you_mean

EXECUTORS = ("inprocess", "local", "slurm")
RUNNERS = ("notebook", "train")


def load_config(config: str | os.PathLike | dict) -> dict:
    """Read a sweep file (or take a dict) and resolve its relative paths.

    The file is read by ``calibnb.runs.strict_yaml.read_yaml()``: YAML 1.2 scalars, and a
    duplicate key, an anchor or alias is refused, naming the file and the line.
    """
    if isinstance(config, dict):
        return dict(config)
    path = Path(config)
    data = read_yaml(path)  # strict: YAML 1.2 scalars, no duplicate keys, no aliases
    folder = path.resolve().parent
    configs = next((f for f in (folder, *folder.parents) if f.name == "configs"), None)
    base = configs.parent if configs else folder
    for key in ("notebook", "out_root"):
        if key in data and (not isinstance(data[key], str) or not data[key]):
            raise ValueError(f"{path}: {key} must be a path (a string), got {data[key]!r}")
        if key in data and not Path(data[key]).is_absolute():
            data[key] = str(base / data[key])
    return data


#: The keys a sweep file may hold (the module docstring says what each means).
SWEEP_KEYS = ("notebook", "out_root", "params", "grid", "runner", "executor", "select")
#: The ``select`` section: the arguments of :func:`calibnb.runs.select_by_validation`.
SELECT_KEYS = ("by", "params", "metric", "among")


def _unknown(keys, known, what: str, where: str) -> None:
    """Refuse the first key of ``keys`` outside ``known``, suggesting the close match."""
    unknown = [k for k in keys if k not in known]
    if unknown:
        hint = did_you_mean(unknown[0], known)
        raise ValueError(f"{where}: unknown key {unknown[0]!r} in {what}{hint}; it holds {list(known)}")


def check_sweep_file(config: dict, where: str = "config") -> None:
    """The sweep file's schema, key by key: top-level keys, ``params`` and ``grid`` shapes,
    ``runner``, the ``executor`` section's ``name`` and the ``select`` section's keys and types.
    Each error names ``where`` (the file) and the key."""
    _unknown(config, SWEEP_KEYS, "the sweep file", where)
    for key in ("notebook", "out_root", "grid"):
        if key not in config:
            raise ValueError(f"{where}: config is missing the key {key!r}")
    for key in ("notebook", "out_root"):
        if not isinstance(config[key], str) or not config[key]:
            raise ValueError(f"{where}: {key} must be a path (a string), got {config[key]!r}")
    if not isinstance(config.get("params") or {}, dict):
        raise ValueError(f"{where}: params must be a mapping of parameter: value, got {config['params']!r}")
    if config.get("runner", "notebook") not in RUNNERS:
        raise ValueError(f"{where}: runner must be one of {list(RUNNERS)}, got {config['runner']!r}")
    executor = config.get("executor") or {}
    if not isinstance(executor, dict):
        raise ValueError(f"{where}: executor must be a mapping (name: and submitit's parameters), got {executor!r}")
    check_executor(executor.get("name", "inprocess"), {k: v for k, v in executor.items() if k != "name"}, where)
    if "select" in config:
        select = config["select"]
        if not isinstance(select, dict):
            raise ValueError(f"{where}: select must be a mapping with keys {list(SELECT_KEYS)}, got {select!r}")
        _unknown(select, SELECT_KEYS, "select", where)
        for key in ("by", "params"):
            if key not in select:
                raise ValueError(f"{where}: select is missing the key {key!r}")
        names = lambda v: isinstance(v, list) and v and all(isinstance(x, str) for x in v)  # noqa: E731
        if not (isinstance(select["by"], str) or names(select["by"])):
            raise ValueError(f"{where}: select.by must be a column name or a list of them, got {select['by']!r}")
        if not names(select["params"]):
            raise ValueError(f"{where}: select.params must be a list of parameter names, got {select['params']!r}")
        if not isinstance(select.get("metric", "val_ece"), str):
            raise ValueError(f"{where}: select.metric must be a column name, got {select['metric']!r}")
        if select.get("among") is not None and not isinstance(select["among"], list):
            raise ValueError(f"{where}: select.among must be a list, got {select['among']!r}")


def expand_grid(config: str | os.PathLike | dict) -> list[dict]:
    """Every run's canonical parameters, in a stable order, without duplicates.

    The sweep file is schema-checked first (``check_sweep_file()``): a key outside
    ``SWEEP_KEYS`` (or ``SELECT_KEYS`` in ``select``) is refused, and
    every run's parameters (``params`` and ``grid`` names and value types, and for the training
    notebook their values and nested keys) are checked against the notebook's ``parameters``
    cell and put in canonical form (``calibnb.runs.parameters.check_parameters()``: defaults
    filled in, ``loss_params.gamma`` written ``gamma``), so two spellings of one run are one run;
    each error names the file.
    """
    return [params for params, _ in _canonical_runs(config)[1]]


def _canonical_runs(config) -> tuple[dict, list[tuple[dict, str]]]:
    """``(config, [(canonical params, run name), ...])`` of a sweep file, checked."""
    where = str(config) if isinstance(config, (str, os.PathLike)) else "config"
    config = load_config(config)
    check_sweep_file(config, where)
    try:
        grid = _expand(config)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    declared = declared_parameters(config["notebook"])
    runs, seen = [], set()
    for params in grid:
        try:
            params = check_parameters(config["notebook"], params, declared)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from None
        name = run_name(params, declared)
        if name not in seen:
            seen.add(name)
            runs.append((params, name))
    if config.get("select"):
        _check_selection(config["select"], [p for p, _ in runs], declared, where)
    return config, runs


def _check_selection(select: dict, runs: list[dict], declared: dict, where: str) -> None:
    """The ``select`` section names parameters the notebook declares, and ``among`` names values
    that its ``by`` column takes in this sweep (``among: [focal_los]`` would select nothing)."""
    by = [select["by"]] if isinstance(select["by"], str) else select["by"]
    for key, names in (("by", by), ("params", select["params"])):
        for name in names:
            if name not in declared:
                raise ValueError(f"{where}: select.{key} names {name!r}, which is no parameter of the "
                                 f"notebook{did_you_mean(name, declared)}")
    if select.get("among") is not None:
        if len(by) != 1:
            raise ValueError(f"{where}: select.among needs a single select.by column, got {by}")
        values = {p[by[0]] for p in runs}
        for value in select["among"]:
            if value not in values:
                raise ValueError(f"{where}: select.among names {value!r}, but no run of the sweep has "
                                 f"{by[0]} = {value!r}{did_you_mean(str(value), [str(v) for v in values])}")


def _expand(config: dict) -> list[dict]:
    shared = config.get("params") or {}
    grids = config["grid"] if isinstance(config["grid"], list) else [config["grid"]]
    runs = []
    for grid in grids:
        if not isinstance(grid, dict) or not grid:
            raise ValueError(f"each grid must be a non-empty mapping, got {grid!r}")
        axes = {k: (v if isinstance(v, list) else [v]) for k, v in grid.items()}
        empty = [k for k, v in axes.items() if not v]
        if empty:
            raise ValueError(f"grid dimension {empty[0]!r} is an empty list")
        runs += [{**shared, **dict(zip(axes, values))} for values in itertools.product(*axes.values())]
    return runs


def plan(config: str | os.PathLike | dict) -> list[tuple[dict, Path, bool]]:
    """``(params, run folder, finished?)`` for every run of the sweep (schema-checked first).

    A run whose test data ``prune`` removed counts as unfinished again when the sweep's selection
    now chooses it (new runs can change which setting wins), so the sweep regenerates it.
    """
    config, runs = _canonical_runs(config)
    root = Path(config["out_root"])
    done = [is_finished(root / name) for _, name in runs]
    pruned = [i for i, (_, name) in enumerate(runs) if done[i] and is_pruned(root / name)]
    if pruned and config.get("select"):
        from .results import losing_runs

        losing = {folder.name for folder in losing_runs(root, **config["select"])}
        for i in pruned:
            done[i] = runs[i][1] in losing
    return [(params, root / name, finished) for (params, name), finished in zip(runs, done)]


def sweep(
    config: str | os.PathLike | dict,
    executor: str | None = None,
    dry_run: bool = False,
    **executor_params,
) -> list[Path]:
    """Run every unfinished run of the sweep; return the folders of all runs (finished or not).

    ``executor`` is ``"inprocess"`` (default), ``"local"`` or ``"slurm"``; extra keyword
    arguments (``timeout_min``, ``slurm_partition``, ``gpus_per_node``, ...) are passed to
    ``submitit.AutoExecutor.update_parameters`` and override the file's ``executor`` section;
    names submitit does not know are refused before anything runs (``check_executor()``).
    With ``dry_run=True`` nothing runs. Failed runs are reported together at the end in one
    :class:`RunsFailed`, naming each run and where its log is, after every other run had its chance.
    """
    config = load_config(config)
    defaults = dict(config.get("executor") or {})
    name = executor or defaults.pop("name", "inprocess")
    defaults.pop("name", None)
    options = {**defaults, **executor_params}
    check_executor(name, options, "sweep")
    runs = plan(config)
    todo = [(params, folder) for params, folder, done in runs if not done]
    if dry_run:
        return [folder for _, folder, _ in runs]
    for _, folder, done in runs:  # a run killed after its metrics.json may have left temporaries
        if done:
            remove_leftovers(folder)
    if not todo:
        return [folder for _, folder, _ in runs]

    run = functools.partial(execute, config["notebook"]) if config.get("runner", "notebook") == "notebook" \
        else run_training
    failures = []
    if name == "inprocess":
        for params, folder in todo:
            try:
                run(params, folder)
            except Exception as exc:  # keep going: one bad run must not stop the sweep
                failures.append((folder, exc, folder / "failed.ipynb"))
    else:
        import submitit

        try:
            pool = submitit.AutoExecutor(folder=Path(config["out_root"]) / "_submitit", cluster=name)
        except RuntimeError as error:  # submitit: 'Could not detect "srun"'
            raise ValueError(f"executor {name!r} cannot run here: {error}") from None
        pool.update_parameters(**options)
        jobs = pool.map_array(run, [p for p, _ in todo], [f for _, f in todo])
        for job, (_, folder) in zip(jobs, todo):
            try:
                job.result()
            except Exception as exc:
                failures.append((folder, exc, job.paths.stderr))
    if failures:
        raise RunsFailed(failures, len(todo))
    return [folder for _, folder, _ in runs]


class RunsFailed(RuntimeError):
    """Some runs of a sweep failed; the message names each (its folder, first error line, log)."""

    def __init__(self, failures: list, total: int):
        self.failures = failures
        runs = "; ".join(f"{folder.name}: {_first_line(exc)} (log: {log})" for folder, exc, log in failures)
        super().__init__(f"{len(failures)} of {total} runs failed: {runs}")


def check_executor(name: str, options: dict, where: str) -> None:
    """Refuse an executor name outside :data:`EXECUTORS` and options submitit's ``AutoExecutor``
    takes (its own names, and ``slurm_*``/``local_*`` for those clusters), naming ``where`` and
    the key. The ``inprocess`` executor ignores them, so ``--executor inprocess`` runs a Slurm
    sweep file here. (Whether Slurm is there is known only when the sweep runs.)"""
    if name not in EXECUTORS:
        raise ValueError(f"{where}: executor name must be one of {list(EXECUTORS)}, got {name!r}")
    import submitit
    from submitit.local.local import LocalExecutor
    from submitit.slurm.slurm import SlurmExecutor

    known = set(submitit.AutoExecutor._valid_parameters())
    known |= {f"{cluster}_{p}" for cluster, executor in (("slurm", SlurmExecutor), ("local", LocalExecutor))
              for p in executor._valid_parameters()}
    for key in options:
        if key not in known:
            raise ValueError(f"{where}: unknown executor option {key!r}{did_you_mean(key, known)}")


def prune_sweep(config: str | os.PathLike | dict, dry_run: bool = False) -> list[Path]:
    """Apply the sweep file's ``select`` section with :func:`calibnb.runs.prune_unselected`, only
    once every run of the sweep is finished (naming the ones that are not, else), so no run that a
    later result could still select loses its test data. With ``dry_run`` nothing is deleted and
    the folders that would be pruned are returned."""
    from .results import prune_unselected

    where = str(config) if isinstance(config, (str, os.PathLike)) else "config"
    loaded = load_config(config)
    select = loaded.get("select")
    if not isinstance(select, dict):
        raise ValueError(f"{where} has no 'select' section: nothing to prune by")
    missing = [folder for _, folder, done in plan(config) if not done]
    if missing:
        names = ", ".join(folder.name for folder in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ValueError(f"{where}: {len(missing)} run(s) of the sweep are not finished ({names}); run the sweep "
                         "to the end first, so the selection that pruning applies is final")
    return prune_unselected(loaded["out_root"], **select, dry_run=dry_run)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
