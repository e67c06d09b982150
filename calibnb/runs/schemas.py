"""The schemas of the files a run writes, and the one way to read them back.

Two files are checked for meaning, not only type: a training run's ``metrics.json``
(:func:`calibnb.train.train`; pruned to its validation part by
:func:`calibnb.runs.prune_unselected`) and a post-hoc study run's ``metrics.json``
(:func:`calibnb.runs.posthoc.posthoc_run`). Refused:

* a key the writer never writes, at any level: a misspelled metric would otherwise become a
  column of its own (or be dropped) and the real one read as missing;
* a number out of its range or not finite: every ECE variant, the error rate and an AUROC lie in
  [0, 1], the NLL is >= 0, the Brier score lies in [0, 2], temperatures are > 0, a focal γ is
  >= -1 (where the focal calibration map is defined);
* a missing part: a finished run has at least its validation metrics (``{}`` is refused), and
  test metrics come with the temperatures they were computed with;
* JSON that Python's parser would take silently: a key twice in one object (the last would win)
  and ``NaN``, ``Infinity`` or a number that overflows to infinity.

Every refusal is a one-line ``ValueError`` naming the file and the JSON path of the bad value,
e.g. ``runs/x/metrics.json: test.pre.ece = 7.5 is not in [0, 1]``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from pathlib import Path

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import best_match, by_relevance

from ..atomic import check_seal
from .._validation import did_you_mean
from ..data import SHIFTS, list_predictions

NUMBER = {"type": "number"}  # finite: see _Validator
FRACTION = {"type": "number", "minimum": 0, "maximum": 1}
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
GAMMA = {"type": "number", "minimum": -1}
#: The range of each metric of :func:`calibnb.metrics.calibration_report`.
REPORT = {"ece": FRACTION, "adaece": FRACTION, "classwise_ece": FRACTION, "mce": FRACTION,
          "smooth_ece": FRACTION, "error": FRACTION, "debiased_ece": FRACTION, "ece_sweep": FRACTION,
          "nll": {"type": "number", "minimum": 0}, "brier": {"type": "number", "minimum": 0, "maximum": 2}}
SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
#: What :func:`calibnb.atomic.seal` adds: the sha256 of the files beside the document, and its own.
SEAL = {"files": {"type": "object", "additionalProperties": SHA256}, "sha256": SHA256}
#: The post-hoc calibrations a training run reports on the test set, beside ``pre`` (none).
STAGES = ("pre", "ts", "fts")


def _object(properties: dict, required=(), **more) -> dict:
    """A JSON object with only these keys."""
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, **more}


def _list(items: dict, **more) -> dict:
    return {"type": "array", "items": items, **more}


def _number_or_null(schema: dict) -> dict:
    return {**schema, "type": ["number", "null"]}


def _report(required) -> dict:
    return _object(REPORT, required)


@functools.cache
def run_schema() -> dict:
    """A training run's ``metrics.json`` (:func:`calibnb.train.evaluate.evaluate_logits` plus
    ``gammas`` and AdaFocal's ``adafocal_updates``; a pruned run keeps ``val``, ``gammas`` and
    ``adafocal_updates``). Each report has at least :data:`calibnb.runs.METRICS`."""
    from .results import METRICS  # results reads through this module

    report = _report(METRICS)
    return _object({
        "val": report,
        "test": _object(dict.fromkeys(STAGES, report), STAGES),
        "temperature": POSITIVE,
        "fts": _object({"gamma": GAMMA, "temperature": POSITIVE}, ("gamma", "temperature")),
        "ood": _object({shift: _object(dict.fromkeys(STAGES, FRACTION), STAGES) for shift in SHIFTS}),
        "gammas": _list(_list(NUMBER)),  # each epoch's γ of a loss that adapts them
        "selected_epoch": {"type": "integer", "minimum": 1},  # a recipe selecting by validation
        **SEAL,
        "adafocal_updates": _list(_object(  # an empty bin's gap and γ are null
            {"edges": _list(FRACTION), "gaps": _list(_number_or_null({"minimum": -1, "maximum": 1})),
             "gammas": _list(_number_or_null(NUMBER))}, ("edges", "gaps", "gammas"))),
    }, ["val"], dependentRequired={"test": ["temperature", "fts"], "temperature": ["test"],
                                   "fts": ["test"], "ood": ["test"]})


@functools.cache
def posthoc_schema() -> dict:
    """A post-hoc study run's ``metrics.json``: a report per method of
    :data:`calibnb.runs.posthoc.METHODS` and ``pre``, and the fitted state each method stores."""
    from .posthoc import METHODS  # posthoc reads through this module

    methods = ("pre", *METHODS)
    fitted = {"temperature": POSITIVE, "gamma": GAMMA,
              "weights": _list(FRACTION, minItems=3, maxItems=3)}  # ensemble TS's w1, w2, w3
    count = {"type": "integer", "minimum": 1}
    return _object({
        "test": _object({m: _report(REPORT) for m in methods}, methods),
        "params": _object({m: _object(fitted) for m in METHODS}, METHODS),
        "network": {"enum": list(list_predictions())},
        "split": {"type": "integer", "minimum": 0},
        "n_calibration": count,
        "n_test": count,
        **SEAL,
    }, ["test", "params", "network", "split", "n_calibration", "n_test"])


def read_run_metrics(path: str | os.PathLike) -> dict:
    """A training run's ``metrics.json``, read with :func:`read_json`, checked against
    :func:`run_schema` and then against its seal (:func:`calibnb.atomic.check_seal`), so a value out
    of range is named as such and an in-range change still shows."""
    return check_seal(check(read_json(path, "a run's metrics"), run_schema(), path), path)


def read_posthoc_metrics(path: str | os.PathLike) -> dict:
    """A post-hoc study run's ``metrics.json``, read with :func:`read_json` and checked against
    :func:`posthoc_schema`."""
    return check_seal(check(read_json(path, "a post-hoc run's metrics"), posthoc_schema(), path), path)


def read_json(path: str | os.PathLike, what: str):
    """The JSON document in ``path``; ``what`` it should be names it in the error.

    Refused besides what :func:`json.loads` refuses: a key twice in one object (``json`` keeps the
    last silently) and ``NaN``, ``Infinity`` or a number that overflows to infinity (``json``
    reads them as floats; no writer of calibnb writes them).
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"), object_pairs_hook=_unique_keys,
                          parse_constant=_no_constant, parse_float=_finite_float)
    except OSError as error:
        raise ValueError(f"{path} cannot be read as {what}: {error.strerror or error}") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError and the hooks' refusals
        raise ValueError(f"{path} is not {what} (JSON): {error}") from None


def check(document, schema: dict, path: str | os.PathLike = "document"):
    """``document`` if it matches ``schema``, else a one-line ``ValueError`` naming ``path`` and
    the JSON path of (the most relevant) bad value: of a misspelled key, the unknown key (with
    the known one it is closest to) rather than the missing one."""
    error = best_match(_Validator(schema).iter_errors(document),
                       key=by_relevance(strong=frozenset({"additionalProperties"})))
    if error is not None:
        raise ValueError(f"{path}: {_explain(error)}")
    return document


def _finite(checker, value) -> bool:
    number = Draft202012Validator.TYPE_CHECKER.is_type(value, "number")
    return number and (isinstance(value, int) or math.isfinite(value))  # an int of any size is finite


#: Draft 2020-12 in which a number is finite: a NaN would pass every range check (each
#: comparison with it is false).
_Validator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("number", _finite))

_TYPES = {"object": "a mapping", "array": "a list", "number": "a finite number", "integer": "an integer",
          "null": "null"}


def _explain(error) -> str:
    """What is wrong, and where: ``test.pre.ece = 7.5 is not in [0, 1]``."""
    path, value, schema, kind = list(error.absolute_path), error.instance, error.schema, error.validator
    if kind == "additionalProperties":
        known = schema["properties"]
        key = next(k for k in value if k not in known)
        hint = did_you_mean(key, known)
        return f"{_where([*path, key])} is not a known key{hint}; known: {', '.join(known)}"
    if kind == "required":
        return f"{_where([*path, next(k for k in error.validator_value if k not in value)])} is missing"
    if kind == "dependentRequired":
        key, missing = next((k, x) for k, needs in error.validator_value.items() if k in value
                            for x in needs if x not in value)
        return f"{_where([*path, missing])} is missing (it goes with {key!r})"
    shown = f"{_where(path)} = {_show(value)}"
    if kind in ("minimum", "maximum", "exclusiveMinimum"):
        return f"{shown} is not {_range(schema)}"
    if kind == "type":
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return f"{shown} is not {' or '.join(_TYPES[t] for t in types)}"
    if kind == "enum":
        return f"{shown} is not one of {', '.join(map(str, schema['enum']))}"
    return f"{shown}: {' '.join(error.message.split())}"  # minItems, maxItems


def _where(path) -> str:
    """``test.pre.ece``, ``gammas[0][3]``, ``ood['odd name']``; ``the top level`` for the root."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text or "the top level"


def _range(schema: dict) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if "exclusiveMinimum" in schema:
        return f"> {schema['exclusiveMinimum']:g}"
    if high is None:
        return f">= {low:g}"
    return f"in [{low:g}, {high:g}]" if low is not None else f"<= {high:g}"


def _show(value) -> str:
    text = json.dumps(value, allow_nan=True, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def _unique_keys(pairs: list) -> dict:
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number (calibnb writes only finite numbers)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows to {value}")
    return value
