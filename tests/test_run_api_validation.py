"""Every public callable of the run machinery and of the analysis validates its arguments (issue 25,
item 7).

The callables are discovered from ``__all__`` of :mod:`calibnb.atomic`, :mod:`calibnb.runs`,
:mod:`calibnb.analysis` and :mod:`calibnb.train` (:mod:`test_public_api_validation` does the same
for the losses, metrics and calibrators). Each is called with every required argument of a wrong kind (None, a float, a word,
a mapping, a list, an arbitrary object): it either accepts the value (a word is a valid path) or
refuses it with a ``ValueError``/``TypeError``, never with an ``AttributeError``, ``KeyError``,
``IndexError`` or anything else that names no argument.
"""

from __future__ import annotations

import inspect
import warnings

import pytest

from calibnb import analysis, atomic, runs, train

MODULES = {"calibnb.atomic": atomic, "calibnb.runs": runs, "calibnb.analysis": analysis,
           "calibnb.train": train}
#: Public names not called generically, with the reason.
EXCLUDED = {
    "calibnb.analysis.FAMILIES": "a constant",
    "calibnb.analysis.VERDICTS": "a constant",
    "calibnb.atomic.FLOAT16_MAX": "a constant",
    "calibnb.atomic.SEAL_KEYS": "a constant",
    "calibnb.runs.EXECUTION_KEYS": "a constant",
    "calibnb.runs.METRICS": "a constant",
    "calibnb.runs.SWEEP_SETTINGS": "a constant",
    "calibnb.runs.RunsFailed": "an exception class, raised by sweep",
    "calibnb.train.RECIPES": "a constant",
    "calibnb.train.Recipe": "a frozen dataclass of the papers' recipes; TrainConfig checks the names given",
    "calibnb.train.TrainConfig": "validated field by field in tests/test_train.py's parametrised cases",
    "calibnb.train.Trainer": "takes a TrainConfig or a dict, which TrainConfig validates",
    "calibnb.train.count_host_reads": "a context manager with no argument of its own",
    "calibnb.atomic.atomic_path": "a context manager over any path; its failure modes are tested in test_runs.py",
}
WRONG = {"None": None, "float": 3.5, "word": "nonsense", "mapping": {"x": 1}, "list": [1, "a"], "object": object()}


def public_callables() -> list[tuple[str, object]]:
    found = []
    for module_name, module in MODULES.items():
        for name in module.__all__:
            qualified = f"{module_name}.{name}"
            if qualified not in EXCLUDED:
                found.append((qualified, getattr(module, name)))
    return found


CALLABLES = public_callables()


def test_every_public_name_is_a_function_or_excluded_with_a_reason():
    not_functions = [name for name, value in CALLABLES if not inspect.isfunction(value)]
    assert not not_functions, f"neither functions nor in EXCLUDED with a reason: {not_functions}"
    stale = [name for name in EXCLUDED if name.rsplit(".", 1)[1] not in MODULES[name.rsplit(".", 1)[0]].__all__]
    assert not stale, f"EXCLUDED names no longer public: {stale}"


@pytest.mark.parametrize("kind", WRONG)
@pytest.mark.parametrize("name, function", CALLABLES, ids=[name for name, _ in CALLABLES])
def test_a_wrong_kind_of_argument_is_refused_by_value_or_type_error(name, function, kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a word is a valid path: whatever it writes goes here
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function(*[WRONG[kind]] * len(required))
    except (ValueError, TypeError) as error:
        assert str(error).strip(), f"{name}: an error without a message"
