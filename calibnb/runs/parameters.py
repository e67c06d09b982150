"""A notebook's declared parameters, and a run's parameters checked against them before a kernel
starts (issue 18): ``-p gama 5`` is refused with "did you mean 'gamma'?", not run with γ's default.

papermill injects any name it is given, declared or not, so a mistyped parameter would otherwise
run the whole notebook with the default value and report success. :func:`declared_parameters`
reads the cell tagged ``parameters`` (papermill's own ``inspect_notebook``), and
``check_parameters()`` refuses unknown names and values whose type differs from the declared
default's; a notebook whose parameters are :class:`calibnb.train.TrainConfig`'s (the training
notebook) also has the values checked by ``TrainConfig.from_params``.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
import tempfile
from pathlib import Path

from .._validation import did_you_mean

#: Declared default type → the value types a run may give instead (None declares "anything").
_ACCEPTS = {bool: (bool,), int: (int,), float: (int, float), str: (str,), list: (list,),
            dict: (dict,), tuple: (list, tuple)}


def declared_parameters(notebook: str | os.PathLike) -> dict:
    """Name → default value of every parameter in ``notebook``'s ``parameters`` cell.

    ``notebook`` is a jupytext text notebook or an ``.ipynb``. A default that is not a Python
    literal is returned as its source text. A notebook without a ``parameters`` cell declares none.
    """
    import jupytext
    import nbformat
    import papermill

    notebook = Path(notebook)
    if not notebook.is_file():
        raise ValueError(f"notebook {str(notebook)!r} does not exist")
    stat = notebook.stat()  # a sweep asks once per run: read each version of the file once
    return copy.deepcopy(dict(_declared(notebook.resolve(), stat.st_mtime_ns, stat.st_size)))


@functools.lru_cache(maxsize=16)
def _declared(notebook: Path, mtime_ns: int, size: int) -> tuple:
    import jupytext
    import nbformat
    import papermill

    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / f"{notebook.stem}.ipynb"
        nbformat.write(jupytext.read(notebook), source)
        found = papermill.inspect_notebook(str(source))
    declared = {}
    for name, entry in found.items():
        try:
            declared[name] = ast.literal_eval(entry["default"])
        except (ValueError, SyntaxError):
            declared[name] = entry["default"]
    return tuple(declared.items())


def check_parameters(notebook: str | os.PathLike, params: dict, declared: dict | None = None) -> dict:
    """The run's full parameters (declared defaults updated by ``params``), or a ``ValueError``.

    Refused: a name the notebook does not declare (the message suggests the closest declared
    one), and a value whose type the declared default does not admit (an int where a float is
    declared is admitted; a declared ``None`` admits anything). For the training notebook the
    values are then checked by :meth:`calibnb.train.TrainConfig.from_params`.
    """
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    declared = declared_parameters(notebook) if declared is None else declared
    for name, value in params.items():
        if name not in declared:
            hint = did_you_mean(name, declared) or f"; it declares {sorted(declared)}"
            raise ValueError(f"unknown parameter {name!r} for {notebook}{hint}")
        default = declared[name]
        accepted = _ACCEPTS.get(type(default))
        wrong_bool = isinstance(value, bool) and type(default) in (int, float)
        if accepted and (not isinstance(value, accepted) or wrong_bool):
            raise ValueError(f"parameter {name!r} for {notebook} must be a {type(default).__name__} "
                             f"like its default {default!r}, got {value!r}")
    # where the run writes is the run folder's business (calibnb.runs.execute), not the run's
    full = {k: v for k, v in {**declared, **params}.items() if k != "out_dir"}
    if _is_training_notebook(declared):
        full = _flat_loss_params(full)
        try:
            check_training_parameters(full)
        except (TypeError, ValueError) as error:
            raise ValueError(f"parameters for {notebook}: {error}") from None
    return full


def canonical_parameters(notebook: str | os.PathLike, params: dict) -> tuple[dict, dict]:
    """``(canonical, declared)``: the run's parameters as ``check_parameters()`` accepts them,
    every declared default filled in and ``loss_params``' γ, λ, α written flat (``gamma``), and
    the notebook's declared defaults. Two spellings of one run give equal canonical parameters,
    hence one run folder (:func:`calibnb.runs.run_name`)."""
    declared = declared_parameters(notebook)
    return check_parameters(notebook, params, declared), declared


def training_defaults() -> dict:
    """The training notebook's declared parameters, from :class:`calibnb.train.TrainConfig`: its
    fields' defaults and the flat loss parameters (``gamma``, ``lam``, ``alpha``: None)."""
    from dataclasses import MISSING, fields

    from ..train import TrainConfig
    from ..train.config import FLAT_LOSS_PARAMS

    defaults = {f.name: f.default if f.default is not MISSING else f.default_factory() for f in fields(TrainConfig)}
    return {**defaults, **dict.fromkeys(FLAT_LOSS_PARAMS)}


def canonical_training_parameters(params: dict) -> dict:
    """The canonical form (see :func:`canonical_parameters`) of training parameters given without a
    notebook (the ``train`` runner), checked by :func:`check_training_parameters`."""
    full = _flat_loss_params({**training_defaults(), **params})
    check_training_parameters(full)  # an unknown name too, with the closest known one
    return full


def _flat_loss_params(params: dict) -> dict:
    """``params`` with ``loss_params``' γ, λ, α moved to the flat names; the same parameter given
    both ways with two values is refused, naming both."""
    from ..train.config import FLAT_LOSS_PARAMS

    loss_params = params.get("loss_params")
    if not isinstance(loss_params, dict):
        return params  # TrainConfig refuses it, naming loss_params
    params, loss_params = dict(params), dict(loss_params)
    for name in FLAT_LOSS_PARAMS:
        if name not in loss_params:
            continue
        nested = loss_params.pop(name)
        if params.get(name) is not None and nested is not None and params[name] != nested:
            raise ValueError(f"{name} is given twice with two values: {name} = {params[name]!r} and "
                             f"loss_params.{name} = {nested!r}; give it once")
        params[name] = nested if nested is not None else params.get(name)
    params["loss_params"] = loss_params
    return params


def check_training_parameters(params: dict) -> None:
    """Refuse training parameters that :meth:`calibnb.train.TrainConfig.from_params` refuses.

    Where the run goes and what the machine has are checked when the run starts, not here
    (``out_dir``, ``resume`` and ``device`` are left out): a GPU sweep is planned and checked on a
    machine without one.
    """
    from ..train import TrainConfig

    TrainConfig.from_params(**{**params, "out_dir": None, "resume": False, "device": "cpu"})


def _is_training_notebook(declared: dict) -> bool:
    return bool(declared) and set(declared) == set(training_defaults())
