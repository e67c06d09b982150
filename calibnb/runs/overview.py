"""Sweep files and training recipes as a reader reads them: the tables the chapters show.

- :func:`describe`: the first sentence of a sweep file's leading comment (what it regenerates);
- :func:`sweep_summary`: one row per sweep file (its runs, that sentence, its data sets and
  losses), and :func:`sweep_summary_markdown`, the same as the list the reproducing chapter shows;
- :func:`sweep_settings`: the settings that several sweep files share by all their runs, side by side;
- :func:`sweep_candidates`: a sweep file's grid, one row per loss with its candidate settings;
- :func:`recipe_table`: the training recipes (:data:`calibnb.train.RECIPES`) in words;
- :func:`setting_text`: a setting of a sweep file as a reader writes it.

Everything here reads sweep files through ``calibnb.runs.strict_yaml`` (:func:`expand_grid` or
``read_yaml``) and writes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_type
from ..train.recipes import RECIPES, Recipe
from .strict_yaml import read_yaml
from .sweep import expand_grid

#: The settings :func:`sweep_settings` shows by default: a key of the sweep file's ``params`` (or
#: of the file itself, as ``out_root``) and its label.
SWEEP_SETTINGS = {"dataset": "data set", "model": "network", "recipe": "recipe", "epochs": "epochs",
                  "train_size": "training examples", "val_size": "validation examples",
                  "ood": "out-of-distribution sets", "out_root": "runs in"}
#: What an absent setting means, where it is not the training notebook's default.
_ABSENT = {"ood": "none"}
#: The optimisers of :class:`calibnb.train.Recipe` in words.
_OPTIMISERS = {"sgd": "SGD, momentum {momentum:g}", "adam": "Adam", "adamw": "AdamW"}
#: The model a recipe evaluates (``Recipe.select``) in words.
_SELECTIONS = {"last": "last epoch's", "best_val_error": "lowest validation error"}


def _path(value, name: str) -> Path:
    return Path(check_type(value, name, (str, os.PathLike), "a path (str or os.PathLike)"))


def _sweep_file(value, name: str = "path") -> tuple[Path, dict]:
    """A sweep file's path and its content (read strictly), refused by name if it is not one."""
    path = _path(value, name)
    config = read_yaml(path)
    if "grid" not in config:
        raise ValueError(f"{path}: not a sweep file (it has no 'grid')")
    return path, config


def describe(path: str | os.PathLike) -> str:
    """The first sentence of a sweep file's leading comment block (what the sweep regenerates).

    Comment lines are joined up to the first line that is not a comment or that starts a
    command (a ``#`` and three spaces); the text is cut after its first sentence (a period
    followed by a word, not by a year as in "et al. 2023").
    """
    path = _path(path, "path")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as a sweep file ({error})") from None
    words = []
    for line in text.splitlines():
        if not line.startswith("#") or line.startswith("#   "):
            break
        words.append(line.lstrip("#").strip())
    text = " ".join(w for w in words if w)
    end = re.search(r"(?<!\bal)(?<!e\.g)(?<!i\.e)\.\s+(?=[^\d\s])", text)  # not "et al. 2023"
    return text if end is None else text[: end.start() + 1]


def setting_text(value) -> str:
    """A setting of a sweep file as a reader writes it: a list as ``"1, 2, 3"``, a mapping as
    ``"base = dual"``, ``None`` (absent: the training notebook's default) as ``"default"``.

    >>> setting_text([1, 3]), setting_text({"base": "dual"}), setting_text(None), setting_text(0.5)
    ('1, 3', 'base = dual', 'default', '0.5')
    """
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if value is None:
        return "default"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {x}" for k, x in value.items())
    return str(value)


def _sweep_paths(paths) -> list[Path]:
    """``paths`` as a list of paths: a folder's ``*.yaml`` files sorted by name, a file, or the paths given."""
    if isinstance(paths, (str, os.PathLike)):
        folder = Path(paths)
        if folder.is_file():
            return [folder]
        if not folder.is_dir():
            raise ValueError(f"paths: {folder} is neither a sweep file nor a folder of them")
        found = sorted(folder.glob("*.yaml"))
        if not found:
            raise ValueError(f"paths: {folder} holds no sweep file (*.yaml)")
        return found
    if isinstance(paths, Mapping) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths: expected a folder or a list of sweep files, got {type(paths).__name__}")
    found = [_path(p, "paths") for p in paths]
    if not found:
        raise ValueError("paths: no sweep file given")
    return found


def sweep_summary(paths) -> pd.DataFrame:
    """One row per sweep file: how many runs it plans, what it regenerates, its data and losses.

    Parameters
    ----------
    paths : path or iterable of paths
        A folder (its ``*.yaml`` files, sorted by name; ``configs/`` holds the papers' sweeps),
        one sweep file, or a list of them.

    Returns
    -------
    pandas.DataFrame
        Indexed by the file's name (``"sweep file"``), with the columns ``runs`` (the runs of its
        expanded grid, :func:`expand_grid`), ``regenerates`` (:func:`describe`), ``data sets`` and
        ``losses`` (the sorted names its runs use, as tuples).

    Raises
    ------
    ValueError
        A folder without sweep files, or a file that is no valid sweep file (named).
    """
    rows = {}
    for path in _sweep_paths(paths):
        grid = expand_grid(path)
        rows[path.name] = {"runs": len(grid), "regenerates": describe(path),
                           "data sets": tuple(sorted({p["dataset"] for p in grid})),
                           "losses": tuple(sorted({p["loss"] for p in grid}))}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "sweep file"
    return table


def sweep_summary_markdown(paths, folder: str = "configs") -> str:
    """:func:`sweep_summary` as the Markdown list the reproducing chapter shows: per file, its
    path under ``folder``, its runs and what it regenerates, then its data sets and losses.

    Parameters
    ----------
    paths : path or iterable of paths
        As for :func:`sweep_summary`.
    folder : str
        The folder the list names each file in (the repository's ``configs``).

    Returns
    -------
    str
        One item per file: ``- **`configs/<file>`**, <runs> runs. <sentence>`` and an indented
        line ``Data: ... Losses: ...`` with each name in code.
    """
    check_type(folder, "folder", str, "a str")
    code = lambda names: ", ".join(f"`{name}`" for name in names)  # noqa: E731
    return "\n".join(f"- **`{folder}/{name}`**, {row['runs']} runs. {row['regenerates']}\n"
                     f"  Data: {code(row['data sets'])}. Losses: {code(row['losses'])}."
                     for name, row in sweep_summary(paths).iterrows())


def sweep_settings(sweeps: Mapping, settings: Mapping | None = None) -> pd.DataFrame:
    """The settings several sweep files give all their runs, one column per file.

    Parameters
    ----------
    sweeps : mapping
        A column name (the regime, e.g. ``"Fashion-MNIST"``) → its sweep file.
    settings : mapping, optional
        A key of the file's ``params`` (or of the file itself, such as ``out_root``) → its label;
        default :data:`SWEEP_SETTINGS`.

    Returns
    -------
    pandas.DataFrame
        One row per setting (index ``"setting"``, the labels), one column per sweep, each cell
        :func:`setting_text` of the value as the file writes it: ``"default"`` where the file
        leaves it to the training notebook, ``"none"`` for no out-of-distribution sets.
    """
    check_type(sweeps, "sweeps", Mapping, "a mapping of name → sweep file")
    if not sweeps:
        raise ValueError("sweeps: no sweep file given")
    settings = SWEEP_SETTINGS if settings is None else settings
    if not isinstance(settings, Mapping) or not all(isinstance(k, str) for k in settings):
        raise TypeError(f"settings: expected a mapping of key → label, got {settings!r}")
    columns = {}
    for name, path in sweeps.items():
        _, config = _sweep_file(path, f"sweeps[{name!r}]")
        params = config.get("params") or {}
        columns[name] = {label: setting_text(params.get(key, config.get(key, _ABSENT.get(key))))
                         for key, label in settings.items()}
    table = pd.DataFrame(columns)
    table.index.name = "setting"
    return table


def sweep_candidates(path: str | os.PathLike) -> pd.DataFrame:
    """A sweep file's grid as a reader reads it: one row per loss of each grid block.

    Parameters
    ----------
    path : path
        The sweep file.

    Returns
    -------
    pandas.DataFrame
        The columns ``loss``, ``candidate settings`` (the block's other settings and its
        ``loss_params``, ``"gamma = 1, 2, 3; lam = 0.5, 1.5"``; empty for a loss with the
        notebook's defaults), ``seeds`` and ``chosen on validation`` (``"yes"`` for the losses
        that the file's ``select`` section chooses among).
    """
    path, config = _sweep_file(path)
    grid = config["grid"] if isinstance(config["grid"], list) else [config["grid"]]
    among = (config.get("select") or {}).get("among") or []
    rows = []
    for block in grid:
        settings = {**{k: v for k, v in block.items() if k not in ("loss", "seed", "loss_params")},
                    **(block.get("loss_params") or {})}
        for loss in np.atleast_1d(block["loss"]).tolist():
            rows.append({"loss": loss,
                         "candidate settings": "; ".join(f"{k} = {setting_text(v)}" for k, v in settings.items()),
                         "seeds": setting_text(block.get("seed")),
                         "chosen on validation": "yes" if loss in among else ""})
    return pd.DataFrame(rows)


def recipe_table(recipes: Mapping | None = None) -> pd.DataFrame:
    """The training recipes in words, one row per recipe.

    Parameters
    ----------
    recipes : mapping, optional
        A recipe's name → :class:`calibnb.train.Recipe`; default every recipe of
        :data:`calibnb.train.RECIPES`.

    Returns
    -------
    pandas.DataFrame
        Indexed by the name (``"recipe"``), with the columns ``epochs``, ``batch``,
        ``optimiser``, ``learning rate`` (with its schedule: the warm-up and linear decay, the
        decays and their epochs, or constant), ``weight decay``, ``loss over the batch`` (sum or
        mean), ``gradient clip`` (empty: none) and ``model evaluated``.
    """
    recipes = RECIPES if recipes is None else recipes
    check_type(recipes, "recipes", Mapping, "a mapping of name → calibnb.train.Recipe")
    if not recipes:
        raise ValueError("recipes: no recipe given")
    for name, recipe in recipes.items():
        check_type(recipe, f"recipes[{name!r}]", Recipe, "a calibnb.train.Recipe")
    table = pd.DataFrame({name: {
        "epochs": r.epochs,
        "batch": r.batch_size,
        "optimiser": _OPTIMISERS[r.optimizer].format(momentum=r.momentum),
        "learning rate": f"{r.lr:g}" + (
            f", warm-up {r.warmup:g} epoch, then linear decay" if r.warmup else
            f", ×{r.lr_decay:g} after epochs {', '.join(map(str, r.milestones))}" if r.milestones
            else ", constant"),
        "weight decay": f"{r.weight_decay:g}",
        "loss over the batch": r.reduction,
        "gradient clip": "" if r.grad_clip is None else f"{r.grad_clip:g}",
        "model evaluated": _SELECTIONS[r.select],
    } for name, r in recipes.items()}).T
    table.index.name = "recipe"
    return table
