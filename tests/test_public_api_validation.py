"""Every public callable validates, not only the registered losses (issue 25, item 7).

The callables are *discovered*: every name in ``__all__`` of :mod:`calibnb.losses`,
:mod:`calibnb.metrics` and :mod:`calibnb.calibration` (functions, loss modules, calibrators and
the public methods of those classes, such as ``AdaFocalLoss.update``), so a public function is
tested the day it is added. Each parameter is classified by its default or its example value
(:func:`parameter_roles`): a number, a string option, a flag, an array or class labels. A name
that cannot be called generically is listed in :data:`EXCLUDED` with the reason, and a required
argument without a default takes its value from :data:`EXAMPLES` / :data:`PER_CALLABLE`;
:func:`test_every_public_name_is_covered_or_excluded_with_a_reason` fails for a name or a
parameter that is neither.

``calibnb.atomic``, ``calibnb.runs`` and ``calibnb.train`` are left out for now: another change is
rewriting them (issue 25); add them to :data:`MODULES` once it has landed.

This file tests what every callable must do with

* array-valued arguments (per-bin γ, bin edges, thresholds, grids, proportions, probabilities):
  NaN or inf entries, a wrong length, a wrong number of dimensions, reversed (unsorted) order,
  negated entries, an empty array, huge entries: an error naming the argument or a finite answer
  (never one for NaN, never a finite answer for unsorted edges or thresholds);
* class labels outside ``[0, K)``: -1, K, a float label, a 2-D label array, a wrong length: a
  ``ValueError``/``TypeError`` naming the argument, for every loss, metric and calibrator;
* extreme but finite logits (±1e4, ±3e38 in float32, ±1e300 in float64, rows all equal, a spread
  at the largest the losses accept): a finite loss and finite gradients for every loss in
  :data:`calibnb.losses.LOSSES`, in its functional, module (``get_loss``) and reference forms,
  with ``validate=True`` and ``validate=False``.

:mod:`test_hyperparameters` sweeps the numeric and string parameters and :mod:`test_fuzz` draws
random inputs, both over the same discovered callables (:data:`APIS`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import types
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError

from calibnb import calibration, losses, metrics
from calibnb.losses import reference
from calibnb.losses._common import FOCAL_GAMMA_MAX, TERM_WEIGHT_MAX, max_logit_spread
from calibnb.losses._common import INVERSE_GAMMA_MAX

#: The modules whose ``__all__`` is discovered (calibnb.atomic, calibnb.runs and calibnb.train are
#: left out while another change rewrites them; see the module docstring).
MODULES = {"calibnb.losses": losses, "calibnb.metrics": metrics, "calibnb.calibration": calibration}

#: Public names that are not called generically, each with the reason. Anything else in
#: ``__all__`` is discovered and tested.
EXCLUDED = {
    "calibnb.losses.LOSSES": "a dict, not a callable: each of its values is a loss module class in "
                             "__all__, tested as such (test_the_registry_holds_public_loss_modules)",
    "calibnb.losses.get_loss": "a factory: get_loss(name, **params) is LOSSES[name](**params), so the "
                               "discovered loss modules are its cases; the extreme-logit tests build "
                               "every LOSSES entry through it",
    "calibnb.calibration.PAPER_FTS_TEMPERATURES": "a constant (the papers' grid), not a callable",
    "calibnb.calibration.PAPER_GAMMAS": "a constant (the papers' grid), not a callable",
    "calibnb.calibration.ODIR_GRID": "a constant (the default lambda grid of ODIR), not a callable",
    "calibnb.calibration.PAPER_TEMPERATURES": "a constant (the papers' grid), not a callable",
    "calibnb.calibration.EdgeOfSearchWarning": "a warning category, raised by the calibrators' "
                                               "fit (tests/test_calibration_sklearn.py)",
    "calibnb.calibration.ProbabilitiesAsLogitsWarning": "a warning category, raised by the "
                                                        "calibrators' fit "
                                                        "(tests/test_calibration_sklearn.py)",
}

#: Public methods called through the class's own kind (a loss module's forward, a calibrator's fit,
#: predict_proba and score, on the same data); every other public method with arguments
#: (``AdaFocalLoss.update``, ...) is discovered as a callable of its own, and one without
#: arguments has nothing to validate.
METHODS_BY_KIND = {"loss module": {"forward"}, "calibrator": {"fit", "predict_proba", "score"}}

# ---- valid inputs --------------------------------------------------------------------------

N, K = 64, 5
RNG = np.random.default_rng(0)
LOGITS = RNG.normal(scale=3.0, size=(N, K))
LABELS = np.r_[LOGITS[:48].argmax(1), RNG.integers(0, K, N - 48)]
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)
CONFIDENCES = PROBS.max(1)
CORRECT = (PROBS.argmax(1) == LABELS).astype(np.float64)
EDGES = np.linspace(0.0, 1.0, 16)

#: Valid values of the arguments that have no default, by module and parameter name.
EXAMPLES = {
    "calibnb.losses": {
        "logits": torch.tensor(LOGITS), "targets": torch.tensor(LABELS),
        "logp": torch.log_softmax(torch.tensor(LOGITS), dim=1),
        "val_probs": PROBS, "val_labels": LABELS,
        "p_t": np.linspace(0.05, 0.95, 7),
        "loss": lambda z, t: losses.focal_loss(z, t, reduction="none"),
    },
    "calibnb.metrics": {
        "probs": PROBS, "labels": LABELS, "probs_in": PROBS[:32], "probs_out": PROBS[32:],
        "confidences": CONFIDENCES, "values": CONFIDENCES, "edges": EDGES,
        "bins": np.searchsorted(EDGES[1:-1], CONFIDENCES), "n_bins": 15, "correct": CORRECT,
        "y_true": LABELS, "y_prob": PROBS,  # the scorers, in scikit-learn's order
    },
    "calibnb.calibration": {"probs": PROBS, "logits": LOGITS, "labels": LABELS, "gamma": 0.5},
}

#: Values for one callable, where a name means something else than in its module or a default is
#: too slow for a test (the calibrators' grids of 100 and 4,500 candidates).
PER_CALLABLE = {
    "calibnb.losses.adafocal_loss": {"gammas": [-1.5, -0.2, 0.0, 0.5, 3.0],
                                     "edges": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]},
    "calibnb.losses.adafocal_update": {"gammas": [1.0, -0.5, 0.0, 2.0], "gaps": [0.1, -0.2, 0.05, math.nan]},
    "calibnb.calibration.TemperatureScaling": {"temperatures": [0.5, 1.0, 2.0]},
    "calibnb.calibration.FocalTemperatureScaling": {"gammas": [-0.5, 0.0, 1.0], "temperatures": [0.5, 1.0, 2.0]},
    "calibnb.calibration.MatrixScaling": {"reg_lambda": [0.1, 1.0], "reg_mu": [0.1, 1.0]},
    "calibnb.calibration.DirichletCalibration": {"reg_lambda": [0.1, 1.0], "reg_mu": [0.1, 1.0]},
}

#: Parameters that also take an array (a float or a 1-D array of γ): swept in their array form too.
ARRAY_FORMS = {
    "calibnb.calibration.focal_calibration_map": {"gamma": [-0.5, 0.0, 1.0]},
    "calibnb.calibration.focal_softmax": {"gamma": [-0.5, 0.0, 1.0]},
    "calibnb.calibration.log_focal_softmax": {"gamma": [-0.5, 0.0, 1.0]},
}

#: Array parameters in which NaN has a meaning (AdaFocal's gap of an empty bin).
NAN_MEANS_SOMETHING = {("calibnb.losses.adafocal_update", "gaps")}
#: Callables whose results hold NaN by design, for an empty bin's mean confidence and accuracy
#: (inf is still refused). A reliability table's NaN rows are recognised by their ``count`` column.
NAN_IN_RESULT = {"calibnb.losses.AdaFocalLoss.validation_bins", "calibnb.losses.CalFocalLoss.validation_bins"}

#: The data of the classes' own calls: a loss module's ``forward``, a calibrator's ``fit``.
CLASS_DATA = {
    "loss module": {"logits": torch.tensor(LOGITS), "targets": torch.tensor(LABELS)},
    "calibrator": {"logits": LOGITS, "labels": LABELS},
}

#: Parameters holding class labels.
LABEL_NAMES = ("labels", "targets", "val_labels", "y_true")
#: Array parameters whose order matters: reversed, they must be refused.
ORDERED = ("edges", "thresholds")


# ---- discovery -----------------------------------------------------------------------------


@dataclasses.dataclass
class Api:
    """One public callable and how to call it with valid inputs.

    ``kind`` is ``"function"``, ``"loss module"`` (called on logits and targets), ``"calibrator"``
    (fitted on logits and labels, then predicting) or ``"method"`` (of an instance built with the
    class's valid arguments). ``args`` are the valid arguments of the callable itself (for a class,
    of its constructor); ``data`` those of the class's own call. ``roles`` maps each parameter
    (and the class's data) to ``"number"``, ``"choice"``, ``"flag"``, ``"array"``, ``"labels"`` or
    ``"callable"``; ``values`` holds a valid value of each (its example or its default).
    """

    name: str
    kind: str
    target: object
    args: dict
    roles: dict
    values: dict
    data: dict = dataclasses.field(default_factory=dict)
    owner_args: dict = dataclasses.field(default_factory=dict)

    def parameters(self, role: str) -> list[str]:
        return [name for name, r in self.roles.items() if r == role]

    def run(self, **overrides):
        """Call with valid inputs, ``overrides`` replacing any argument (or the class's data);
        a loss's result comes with its gradients with respect to its floating tensor inputs."""
        args = {k: v for k, v in {**self.args, **overrides}.items() if k not in self.data}
        data = {k: overrides.get(k, v) for k, v in self.data.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.kind == "calibrator":  # its predictions and its score, on the fitted data
                fitted = self.target(**args).fit(data["logits"], data["labels"])
                return [fitted.predict_proba(data["logits"]), fitted.score(data["logits"], data["labels"])]
            if self.kind == "loss module":
                data = with_grad(data)
                return with_gradients(self.target(**args)(**data), data)
            if self.kind == "method":  # a method that returns nothing is judged by the state it leaves
                owner, method = self.target
                instance, args = owner(**self.owner_args), with_grad(args)
                result = getattr(instance, method)(**args)
                if result is None:  # its buffers (its extra state, a record of updates, is judged by them)
                    return [v for v in instance.state_dict().values() if isinstance(v, torch.Tensor)]
                return with_gradients(result, args)
            args = with_grad(args)
            return with_gradients(self.target(**args), args)


def with_grad(args: dict) -> dict:
    """Floating tensors as fresh leaves that require grad (so that every call differentiates)."""
    return {k: v.detach().clone().requires_grad_(True) if isinstance(v, torch.Tensor) and v.is_floating_point()
            else v for k, v in args.items()}


def with_gradients(result, inputs: dict):
    """``result`` and, when it is a tensor (or tuple of tensors) with a graph, the gradients of its
    sum with respect to the floating tensor ``inputs``."""
    parts = result if isinstance(result, tuple) else (result,)
    tensors = [p for p in parts if isinstance(p, torch.Tensor) and p.requires_grad]
    leaves = [v for v in inputs.values() if isinstance(v, torch.Tensor) and v.requires_grad]
    if not tensors or not leaves:
        return result
    total = sum(t.double().sum() for t in tensors)
    grads = torch.autograd.grad(total, leaves, allow_unused=True)
    return [*parts, *(g for g in grads if g is not None)]


def role(name: str, value, annotation) -> str | None:
    """The role of a parameter from its (default or example) value; None when unknown."""
    if name in LABEL_NAMES:
        return "labels"
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, numbers.Real):
        return "number"
    if isinstance(value, str):
        return "choice"
    if isinstance(value, (list, tuple, np.ndarray, torch.Tensor)):
        return "array"
    if callable(value):
        return "callable"
    if value is None and isinstance(annotation, str) and ("int" in annotation or "float" in annotation):
        return "number"  # e.g. ``max_bins: int | None = None``
    return None


def parameter_roles(name: str, module: str, function, skip: int = 0):
    """``(args, roles, values, problems)`` of ``function``'s parameters after the first ``skip``:
    the arguments to pass (examples), each parameter's role and valid value, what is missing."""
    args, roles, values, problems = {}, {}, {}, []
    given = {**EXAMPLES[module], **PER_CALLABLE.get(name, {})}
    for p in list(inspect.signature(function).parameters.values())[skip:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in PER_CALLABLE.get(name, {}) or p.default is inspect.Parameter.empty:
            if p.name not in given:
                problems.append(f"{name}: no example for the required argument {p.name!r} (add one to EXAMPLES)")
                continue
            value = args[p.name] = given[p.name]
        else:
            value = p.default
        r = role(p.name, value, p.annotation)
        if r is None:
            problems.append(f"{name}: cannot tell what {p.name!r} takes (give an example in PER_CALLABLE)")
        else:
            roles[p.name], values[p.name] = r, value
    return args, roles, values, problems


def public_methods(cls) -> list[str]:
    """Public methods (not properties) defined by calibnb's classes in ``cls``'s MRO, except
    overrides of ``torch.nn.Module``'s own protocol (``set_extra_state``...), which torch calls."""
    names = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("calibnb"):
            continue
        for attr, value in vars(klass).items():
            if attr in vars(torch.nn.Module):
                continue
            if not attr.startswith("_") and inspect.isfunction(value) and attr not in names:
                names.append(attr)
    return names


def discover() -> tuple[list[Api], list[str]]:
    """Every public callable of :data:`MODULES` as an :class:`Api`, and what could not be placed."""
    apis, problems = [], []
    for module_name, module in MODULES.items():
        for attr in module.__all__:
            name = f"{module_name}.{attr}"
            if name in EXCLUDED:
                continue
            obj = getattr(module, attr)
            if not callable(obj):
                problems.append(f"{name} is not callable: list it in EXCLUDED with the reason")
                continue
            if not inspect.isclass(obj):
                args, roles, values, found = parameter_roles(name, module_name, obj)
                apis.append(Api(name, "function", obj, args, roles, values))
                problems += found
                continue
            if issubclass(obj, torch.nn.Module):
                kind = "loss module"
            elif hasattr(obj, "fit") and hasattr(obj, "predict_proba"):
                kind = "calibrator"
            else:
                problems.append(f"{name}: a class that is neither a loss module nor a calibrator")
                continue
            args, roles, values, found = parameter_roles(name, module_name, obj.__init__, skip=1)
            data = CLASS_DATA[kind]
            roles.update({k: "labels" if k in LABEL_NAMES else "array" for k in data})
            apis.append(Api(name, kind, obj, args, roles, {**values, **data}, data=data))
            problems += found
            for method in public_methods(obj):
                if method in METHODS_BY_KIND[kind]:
                    continue
                method_name = f"{name}.{method}"
                m_args, m_roles, m_values, found = parameter_roles(method_name, module_name, getattr(obj, method),
                                                                   skip=1)
                problems += found
                if m_roles:  # methods without arguments have nothing to validate
                    apis.append(Api(method_name, "method", (obj, method), m_args, m_roles, m_values,
                                    owner_args=args))
    return apis, problems


APIS, PROBLEMS = discover()
BY_NAME = {api.name: api for api in APIS}


def apis_of(kind: str | None = None, having: str | None = None) -> list[Api]:
    """The discovered callables of a kind and/or with a parameter of a role."""
    return [api for api in APIS
            if (kind is None or api.kind == kind) and (having is None or having in api.roles.values())]


# ---- the contract ------------------------------------------------------------------------------


def finite_result(result, nan_allowed: bool = False) -> bool:
    """Whether every number in ``result`` (a tensor, array, dict of numbers, DataFrame, or a
    tuple/list of them) is finite; a reliability table's NaN for an empty bin is by design, and
    ``nan_allowed`` allows NaN everywhere (:data:`NAN_IN_RESULT`)."""
    values = result if isinstance(result, (tuple, list)) else [result]
    for value in values:
        allowed = nan_allowed or (hasattr(value, "columns") and "count" in value.columns)
        if isinstance(value, torch.Tensor):
            value = value.detach().double().numpy()
        if isinstance(value, dict):
            value = np.array([v for v in value.values() if isinstance(v, (int, float))], dtype=float)
        if hasattr(value, "to_numpy"):
            value = value.select_dtypes("number").to_numpy(dtype=float)
        array = np.asarray(value, dtype=float)
        if not np.isfinite(array[~np.isnan(array)] if allowed else array).all():
            return False
    return True


def outcome(call: Callable, names, nan_allowed: bool = False) -> str:
    """``"clear error"`` (a ``ValueError``/``TypeError`` whose message contains one of ``names``, or
    ``NotFittedError``) or ``"finite result"`` (NaN allowed with ``nan_allowed``); anything else
    fails the calling test."""
    try:
        result = call()
    except (ValueError, TypeError) as error:
        assert any(n in str(error) for n in names), f"the error does not name {names}: {error}"
        return "clear error"
    except NotFittedError:
        return "clear error"
    assert finite_result(result, nan_allowed), f"non-finite result {result!r}"
    return "finite result"


def test_every_public_name_is_covered_or_excluded_with_a_reason():
    assert not PROBLEMS, "\n".join(PROBLEMS)
    public = {f"{m}.{a}" for m, module in MODULES.items() for a in module.__all__}
    assert set(EXCLUDED) <= public, f"stale exclusions: {sorted(set(EXCLUDED) - public)}"
    covered = {api.name for api in APIS if api.kind != "method"}
    assert covered | set(EXCLUDED) == public and not covered & set(EXCLUDED)
    for name in [*PER_CALLABLE, *ARRAY_FORMS, *(n for n, _ in NAN_MEANS_SOMETHING), *NAN_IN_RESULT]:
        assert name in BY_NAME, f"a table names {name}, which is not a discovered public callable"
    assert all(reason.strip() for reason in EXCLUDED.values())


def test_the_discovery_flags_what_it_cannot_call(monkeypatch):
    """A new public name that is not a callable, or has an argument without an example, fails
    the coverage test until it is excluded with a reason or given an example."""
    module = types.ModuleType("calibnb.fake")
    module.CONSTANT = 3
    module.metric = lambda probs, labels, n_bins=15: 0.0
    module.mystery = lambda probs, riddle: 0.0
    module.__all__ = ["CONSTANT", "metric", "mystery"]
    monkeypatch.setitem(MODULES, "calibnb.fake", module)
    monkeypatch.setitem(EXAMPLES, "calibnb.fake", EXAMPLES["calibnb.metrics"])
    apis, problems = discover()
    assert "calibnb.fake.metric" in {api.name for api in apis}
    assert any("calibnb.fake.CONSTANT is not callable" in p for p in problems)
    assert any("calibnb.fake.mystery" in p and "'riddle'" in p for p in problems)


def test_the_discovery_finds_every_kind():
    kinds = {api.kind for api in APIS}
    assert kinds == {"function", "loss module", "calibrator", "method"}
    assert len(apis_of("calibrator")) >= 6 and len(apis_of("loss module")) >= 12
    assert "calibnb.losses.AdaFocalLoss.update" in BY_NAME and "calibnb.metrics.ece" in BY_NAME


def test_the_registry_holds_public_loss_modules():
    modules = {api.target for api in apis_of("loss module")}
    assert set(losses.LOSSES.values()) <= modules
    for name, cls in losses.LOSSES.items():
        assert type(losses.get_loss(name)) is cls


# ---- array-valued arguments -----------------------------------------------------------------


def _numpy(value) -> tuple[np.ndarray, Callable]:
    """``value`` as a numpy array, and the function that turns an array back into its kind."""
    if isinstance(value, torch.Tensor):
        dtype = value.dtype
        return value.detach().numpy(), lambda a: torch.as_tensor(a) if a.dtype.kind != "f" else torch.as_tensor(
            a, dtype=dtype if dtype.is_floating_point else torch.float64)
    return np.asarray(value), lambda a: a


def _with_entry(a: np.ndarray, entry: float) -> np.ndarray:
    out = a.astype(np.float64, copy=True)
    out.flat[0] = entry
    return out


#: Ways to spoil an array argument (numpy in, numpy out).
CORRUPTIONS = {
    "nan entry": lambda a: _with_entry(a, math.nan),
    "inf entry": lambda a: _with_entry(a, math.inf),
    "wrong length": lambda a: np.concatenate([a, a[-1:]]),
    "extra axis": lambda a: a[None],
    "scalar": lambda a: a.reshape(-1)[0],
    "reversed": lambda a: a[::-1].copy(),
    "negated": lambda a: -a,
    "empty": lambda a: a[:0],
    "huge entries": lambda a: a.astype(np.float64) * 1e300,
    "huge positive entries": lambda a: np.abs(a.astype(np.float64)) * 1e300 + 1e300,
}


def _array_cases():
    cases = []
    for api in APIS:
        arrays = {p: api.values[p] for p in api.parameters("array")}
        for p, value in {**arrays, **ARRAY_FORMS.get(api.name, {})}.items():
            cases += [pytest.param(api, p, value, c, id=f"{api.name}-{p}-{c}") for c in CORRUPTIONS]
    return cases


ARRAY_CASES = _array_cases()


@pytest.mark.parametrize("api, parameter, valid, corruption", ARRAY_CASES)
def test_a_spoilt_array_argument_is_refused_by_name_or_gives_a_finite_answer(api, parameter, valid, corruption):
    array, back = _numpy(valid)
    bad = CORRUPTIONS[corruption](array)
    bad = back(np.asarray(bad)) if isinstance(valid, torch.Tensor) else bad
    result = outcome(lambda: api.run(**{parameter: bad}), [parameter], api.name in NAN_IN_RESULT)
    if corruption == "nan entry" and (api.name, parameter) not in NAN_MEANS_SOMETHING:
        assert result == "clear error", f"{api.name} accepted NaN in {parameter}"
    if corruption in ("reversed", "negated") and parameter in ORDERED:
        assert result == "clear error", f"{api.name} accepted unsorted {parameter}"


def test_the_valid_arrays_give_finite_answers():
    for api in APIS:
        assert outcome(api.run, [api.name], api.name in NAN_IN_RESULT) == "finite result", api.name
        for parameter, value in ARRAY_FORMS.get(api.name, {}).items():
            assert outcome(lambda: api.run(**{parameter: value}), [parameter]) == "finite result"


# ---- labels outside [0, K) ---------------------------------------------------------------


#: Ways to spoil class labels (numpy int64 in; the kind of the valid labels out).
BAD_LABELS = {
    "-1": lambda y: np.r_[-1, y[1:]],
    "K": lambda y: np.r_[K, y[1:]],
    "float label": lambda y: y + 0.5,
    "2-D column": lambda y: y[:, None],
    "2-D one-hot": lambda y: np.eye(K, dtype=np.int64)[y],
    "wrong length": lambda y: np.r_[y, 0],
}


def _label_cases():
    cases = []
    for api in apis_of(having="labels"):
        for p in api.parameters("labels"):
            cases += [pytest.param(api.run, api.name, p, api.values[p], c,
                                   id=f"{api.name}-{p}-{c}") for c in BAD_LABELS]
    for name in reference.__all__:  # the reference losses check their targets too
        if name in losses.LOSSES or name == "adafocal_loss":
            run = _reference_call(name)
            cases += [pytest.param(run, f"reference.{name}", "targets", torch.tensor(LABELS), c,
                                   id=f"calibnb.losses.reference.{name}-targets-{c}") for c in BAD_LABELS]
    return cases


def _reference_call(name: str):
    extra = PER_CALLABLE["calibnb.losses.adafocal_loss"] if name == "adafocal_loss" else {}

    def run(targets=torch.tensor(LABELS), logits=torch.tensor(LOGITS)):
        z = logits.clone().requires_grad_(True)
        return with_gradients(getattr(reference, name)(z, targets, **extra), {"logits": z})
    return run


LABEL_CASES = _label_cases()


@pytest.mark.parametrize("run, name, parameter, valid, spoil", LABEL_CASES)
def test_labels_outside_the_classes_are_refused_by_name(run, name, parameter, valid, spoil):
    bad = BAD_LABELS[spoil](np.asarray(valid))
    if isinstance(valid, torch.Tensor):
        bad = torch.as_tensor(bad)
    with pytest.raises((ValueError, TypeError)) as error:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(**{parameter: bad})
    assert parameter in str(error.value), f"{name}: the error does not name {parameter!r}: {error.value}"


WHOLE_FLOAT_CASES = {(case.values[1], case.values[2]): case for case in LABEL_CASES}


@pytest.mark.parametrize("run, name, parameter, valid, spoil", list(WHOLE_FLOAT_CASES.values()),
                         ids=[f"{n}-{p}" for n, p in WHOLE_FLOAT_CASES])
def test_whole_number_float_labels_are_the_integers_or_refused_by_name(run, name, parameter, valid, spoil):
    """Labels as whole-number floats (1.0, 2.0) are the integers they equal for the metrics,
    the calibrators and the validation labels of the losses (numpy labels, as scikit-learn and
    pandas hand them over); a loss's torch ``targets`` must be integers (a float target tensor
    means class probabilities to PyTorch), so there they are refused by name."""
    floats = np.asarray(valid).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if parameter == "targets":
            with pytest.raises((ValueError, TypeError), match=parameter):
                run(**{parameter: torch.as_tensor(floats)})
            return
        as_floats, as_ints = run(**{parameter: floats}), run(**{parameter: valid})
    def parts(result):
        return list(result) if isinstance(result, (list, tuple)) else [result]

    for got, want in zip(parts(as_floats), parts(as_ints), strict=True):
        if hasattr(want, "equals"):
            assert want.equals(got), name
        elif isinstance(want, dict):
            assert got == want, name
        else:
            np.testing.assert_array_equal(torch.as_tensor(got).detach().numpy()
                                          if isinstance(got, torch.Tensor) else got,
                                          torch.as_tensor(want).detach().numpy()
                                          if isinstance(want, torch.Tensor) else want, err_msg=name)


# ---- extreme but finite logits --------------------------------------------------------------


def _rows(value: float, dtype: torch.dtype, offset: float = 0.0) -> torch.Tensor:
    """Four rows spanning ``2 value``; the targets ``EXTREME_TARGETS`` pick each row's largest,
    smallest, middle and a tied smallest logit."""
    v = float(value)
    rows = torch.tensor([[v, 0.0, -v, 0.0], [v, 0.0, -v, 0.0], [v, 0.0, -v, 0.0], [v, v, -v, -v]],
                        dtype=torch.float64)
    return (rows + offset).to(dtype)


EXTREME_TARGETS = torch.tensor([0, 2, 1, 3])
F32, F64 = torch.finfo(torch.float32).max, torch.finfo(torch.float64).max
#: Logits whose every row spans at most what the losses accept (max_logit_spread): each loss must
#: give a finite value and finite gradients, with and without validation.
EXTREME = {
    "±1e4 float32": _rows(1e4, torch.float32),
    "±1e4 float64": _rows(1e4, torch.float64),
    "±65504 float16": _rows(65504.0, torch.float16),
    "±1e300 float64": _rows(1e300, torch.float64),
    "3e38 float32, rows all equal": torch.full((4, 4), 3e38, dtype=torch.float32),
    "-3e38 float32, rows all equal": torch.full((4, 4), -3e38, dtype=torch.float32),
    "3e38 float32, close": torch.tensor([[3e38, 2.99999e38, 3e38, 2.999995e38]] * 4, dtype=torch.float32),
    "largest float32, rows all equal": torch.full((4, 4), F32, dtype=torch.float32),
    "most negative float64, rows all equal": torch.full((4, 4), -F64, dtype=torch.float64),
    "zeros": torch.zeros(4, 4),
    "largest spread float32": _rows(0.499 * max_logit_spread(torch.float32), torch.float32),
    "largest spread float32, near the top": _rows(0.499 * max_logit_spread(torch.float32), torch.float32, F32 / 2),
    "largest spread float64": _rows(0.499 * max_logit_spread(torch.float64), torch.float64),
    "largest spread float64, near the bottom": _rows(0.499 * max_logit_spread(torch.float64), torch.float64,
                                                      -F64 / 2),
}
#: Rows spanning more than the dtype's losses can represent (a log-probability of -6e38 is beyond
#: float32): validation refuses them by name; ``validate=False`` leaves them to the caller, who
#: asked not to be checked, and no finite float32 answer exists.
BEYOND = {
    "±3e38 float32": _rows(3e38, torch.float32),
    "just beyond the float64 spread": _rows(0.51 * max_logit_spread(torch.float64), torch.float64),
}

#: The functional form of the losses registered without one of the same name.
ADAFOCAL_BINS = PER_CALLABLE["calibnb.losses.adafocal_loss"]


def _loss_forms():
    """``(id, make(validate) -> loss(z, t), validates)`` for every loss of LOSSES in each form."""
    from loss_variants import VARIANTS  # the hard settings: gamma < 1, mixed AdaFocal bins, ...

    forms = []
    for name in sorted(losses.LOSSES):
        for validate in (True, False):
            forms.append((f"get_loss({name!r}, validate={validate})",
                          lambda v=validate, n=name: losses.get_loss(n, validate=v, reduction="sum"), validate))
            functional = getattr(losses, name, None)
            if name == "adafocal":
                functional = lambda z, t, **kw: losses.adafocal_loss(z, t, **ADAFOCAL_BINS, **kw)  # noqa: E731
            if functional is not None:
                forms.append((f"{name}(validate={validate})", lambda v=validate, f=functional:
                              lambda z, t: f(z, t, validate=v, reduction="sum"), validate))
        ref_name = "adafocal_loss" if name == "adafocal" else name
        if ref_name in reference.__all__:
            extra = ADAFOCAL_BINS if name == "adafocal" else {}
            forms.append((f"reference.{ref_name}", lambda v=None, f=getattr(reference, ref_name), e=extra:
                          lambda z, t: f(z, t, **e, reduction="sum"), True))
    for variant, make in sorted({**VARIANTS, **AT_THE_BOUNDS}.items()):
        for validate in (True, False):
            forms.append((f"variant {variant!r} (validate={validate})",
                          lambda v=validate, m=make: m(validate=v, reduction="sum"), validate))
    return forms



def _adafocal_at_the_bounds(**kwargs) -> losses.AdaFocalLoss:
    loss = losses.AdaFocalLoss(n_bins=4, gamma_min=-INVERSE_GAMMA_MAX, gamma_max=FOCAL_GAMMA_MAX, **kwargs)
    loss.gammas.copy_(torch.tensor([-INVERSE_GAMMA_MAX, 0.0, 0.5, FOCAL_GAMMA_MAX], dtype=torch.float64))
    return loss


#: Every loss with its hyper-parameters at the largest values it accepts: the bounds are there to
#: keep every value and gradient finite, so they must.
AT_THE_BOUNDS = {
    "focal, largest gamma": lambda **kw: losses.FocalLoss(gamma=FOCAL_GAMMA_MAX, **kw),
    "inverse focal, largest gamma": lambda **kw: losses.InverseFocalLoss(gamma=INVERSE_GAMMA_MAX, **kw),
    "dual focal, largest gamma": lambda **kw: losses.DualFocalLoss(gamma=FOCAL_GAMMA_MAX, **kw),
    "dual focal mean_all, largest gamma": lambda **kw: losses.DualFocalLoss(gamma=FOCAL_GAMMA_MAX, dual="mean_all",
                                                                            **kw),
    "FLSD, largest gammas": lambda **kw: losses.FocalLossSD(gammas=(FOCAL_GAMMA_MAX,) * 3, **kw),
    "DFL-SD, largest gammas": lambda **kw: losses.DualFocalLossSD(gammas=(FOCAL_GAMMA_MAX,) * 3, **kw),
    "FCL, largest gamma and lam": lambda **kw: losses.FocalCalibrationLoss(gamma=FOCAL_GAMMA_MAX,
                                                                           lam=TERM_WEIGHT_MAX, **kw),
    "FCL l1, largest gamma and lam": lambda **kw: losses.FocalCalibrationLoss(
        gamma=FOCAL_GAMMA_MAX, lam=TERM_WEIGHT_MAX, norm="l1", **kw),
    "MMCE, largest lam, narrowest kernel": lambda **kw: losses.MMCELoss(lam=TERM_WEIGHT_MAX, width=0.01, **kw),
    "label smoothing, alpha 1": lambda **kw: losses.LabelSmoothingLoss(alpha=1.0, **kw),
    "AdaFocal, gammas at both bounds": _adafocal_at_the_bounds,
    "CalFocal 1, lam 1e300": lambda **kw: losses.CalFocalLoss(lam=1e300, case=1, gamma_max=FOCAL_GAMMA_MAX, **kw),
    "CalFocal 2, lam 1e300": lambda **kw: losses.CalFocalLoss(lam=1e300, case=2, gamma_max=FOCAL_GAMMA_MAX, **kw),
}
LOSS_FORMS = _loss_forms()

#: float16 logits get float16 gradients, finite below 65504: a bound keeping them so would be 65504
#: over the loss's largest slope (lam = 1e6 times MMCE's slope is beyond it). The bounds are set for
#: float32; float16 training relies on GradScaler skipping inf steps, as with PyTorch's own losses.
HALF_FREE = {f"variant {v!r} (validate={flag})" for v in AT_THE_BOUNDS for flag in (True, False)}


def test_every_registered_loss_has_its_forms_under_test():
    ids = " ".join(form[0] for form in LOSS_FORMS)
    for name in losses.LOSSES:
        assert f"get_loss({name!r}" in ids
    assert sum(form[0].startswith("reference.") for form in LOSS_FORMS) >= 10


@pytest.mark.parametrize("form, make, validates", LOSS_FORMS, ids=[f[0] for f in LOSS_FORMS])
def test_extreme_finite_logits_give_finite_losses_and_gradients(form, make, validates):
    failures = []
    cases = {**EXTREME, **(BEYOND if validates else {})}
    if form in HALF_FREE:
        cases = {case: z for case, z in cases.items() if z.dtype != torch.float16}
    for case, logits in cases.items():
        z = logits.clone().requires_grad_(True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = make()(z, EXTREME_TARGETS)
                (grad,) = torch.autograd.grad(value, z)
        except (ValueError, TypeError) as error:
            if case not in BEYOND or "logits" not in str(error):
                failures.append(f"{case}: {type(error).__name__}: {error}")
            continue
        if case in BEYOND:
            failures.append(f"{case}: accepted a row spread beyond {max_logit_spread(logits.dtype):.3g}")
        elif not (torch.isfinite(value).all() and torch.isfinite(grad).all()):
            failures.append(f"{case}: value {value.detach().tolist()}, finite gradient "
                            f"{bool(torch.isfinite(grad).all())}")
    assert not failures, f"{form}:\n" + "\n".join(failures)
