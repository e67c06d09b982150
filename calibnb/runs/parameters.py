"""A notebook's declared parameters, and a run's parameters checked against them before a kernel
starts (issue 18): ``-p gama 5`` is refused with "did you mean 'gamma'?", not run with γ's default.

papermill injects any name it is given, declared or not, so a mistyped parameter would otherwise
run the whole notebook with the default value and report success. :func:`declared_parameters`
reads the cell tagged ``parameters`` (papermill's own ``inspect_notebook``), and
:func:`check_parameters` refuses unknown names and values whose type differs from the declared
default's; a notebook whose parameters are :class:`calibnb.train.TrainConfig`'s (the training
notebook) also has the values checked by ``TrainConfig.from_params``.
"""

from __future__ import annotations

import ast
import inspect
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
    return declared


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
    full = {**declared, **params}
    if _is_training_notebook(declared):
        try:
            check_training_parameters(full)
        except (TypeError, ValueError) as error:
            raise ValueError(f"parameters for {notebook}: {error}") from None
    return full


def check_training_parameters(params: dict) -> None:
    """Refuse training parameters that :meth:`calibnb.train.TrainConfig.from_params` refuses.

    Where the run goes and what the machine has are checked when the run starts, not here
    (``out_dir``, ``resume`` and ``device`` are left out): a GPU sweep is planned and checked on a
    machine without one.
    """
    from ..train import TrainConfig

    TrainConfig.from_params(**{**params, "out_dir": None, "resume": False, "device": "cpu"})


def _is_training_notebook(declared: dict) -> bool:
    from ..train import TrainConfig
    from ..train.config import FLAT_LOSS_PARAMS

    known = set(inspect.signature(TrainConfig).parameters) | set(FLAT_LOSS_PARAMS)
    return bool(declared) and set(declared) == known
