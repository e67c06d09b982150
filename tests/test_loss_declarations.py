"""Each loss is declared once (:mod:`calibnb.losses.declarations`): the reference form, the
functional, the module and the registry read its hyper-parameters' defaults and ranges from the
declaration, so tampering with one declared range changes what every form accepts."""

import dataclasses
import inspect

import numpy as np
import pytest
import torch

import calibnb.losses
from calibnb.losses import LOSSES, get_loss, reference
from calibnb.losses.declarations import DECLARATIONS, Bins, Choice, Real, RealOrChoice, Reals

#: Functions other than ``<name>`` itself that take a declaration's hyper-parameters.
ALSO = {"adafocal": ["adafocal_loss", "adafocal_update"]}


def forms(declaration) -> dict:
    """Every form of a loss by label: the functionals and reference functions of its name (and
    :data:`ALSO`), its module class and ``get_loss``."""
    names = [declaration.name, *ALSO.get(declaration.name, [])]
    found = {f"{where.__name__}.{n}": getattr(where, n) for where in (calibnb.losses, reference) for n in names
             if inspect.isfunction(getattr(where, n, None))}
    found["module"] = LOSSES[declaration.name]
    found["get_loss"] = lambda **kw: get_loss(declaration.name, **kw)
    return found


def call(form, label: str, **params):
    """Build (a module, ``get_loss``) or run (a function, on small logits) ``form`` with ``params``."""
    if label in ("module", "get_loss"):
        return form(**params)
    if label.endswith("adafocal_update"):
        return form(np.array([1.0, 2.0]), np.array([0.1, -0.1]), **params)
    z, t = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), torch.arange(6) % 4
    if label.endswith("adafocal_loss"):
        return form(z, t, gammas=np.array([1.0, 2.0]), edges=np.array([0.0, 0.5, 1.0]), **params)
    return form(z, t, **params)


def takes(form, label: str, name: str) -> bool:
    if label == "get_loss":
        return True
    return name in inspect.signature(form).parameters


def narrowed(kind):
    """``kind`` with its admissible values narrowed to exclude its default (None: no range)."""
    if isinstance(kind, Real):
        return dataclasses.replace(kind, minimum=kind.default + 1.0, maximum=None, strict=False)
    if isinstance(kind, Reals):
        return dataclasses.replace(kind, element=dataclasses.replace(kind.element, maximum=min(kind.default) / 2))
    if isinstance(kind, (Choice, RealOrChoice)):
        return dataclasses.replace(kind, choices=tuple(c for c in kind.choices if c != kind.default))
    assert isinstance(kind, Bins)  # n_bins: an integer in [1, MAX_BINS] for every loss, no range of its own
    return None


CASES = [(d, name) for d in DECLARATIONS.values() for name, kind in d.params.items() if narrowed(kind) is not None]


@pytest.mark.parametrize(("declaration", "name"), CASES, ids=[f"{d.name}.{n}" for d, n in CASES])
def test_a_narrowed_range_changes_every_form(declaration, name, monkeypatch):
    default = declaration.default(name)
    taking = {label: form for label, form in forms(declaration).items() if takes(form, label, name)}
    assert {"module", "get_loss"} <= set(taking)
    for label, form in taking.items():  # the declared default is accepted by every form ...
        call(form, label, **{name: default})
    monkeypatch.setitem(declaration.params, name, narrowed(declaration.params[name]))
    for label, form in taking.items():  # ... and refused by each, by name, once its range excludes it
        with pytest.raises((ValueError, TypeError), match=name):
            call(form, label, **{name: default})


@pytest.mark.parametrize("declaration", DECLARATIONS.values(), ids=list(DECLARATIONS))
def test_every_signature_takes_its_defaults_from_the_declaration(declaration):
    for label, form in forms(declaration).items():
        if label == "get_loss":
            continue
        signature = inspect.signature(form)
        for name, kind in declaration.params.items():
            if name in signature.parameters:
                assert signature.parameters[name].default == kind.default, (label, name)


def test_every_registered_loss_is_declared_and_every_declaration_registered():
    assert set(LOSSES) == set(DECLARATIONS)
    for name, module in LOSSES.items():
        assert module.declaration is DECLARATIONS[name]
        hyper = set(inspect.signature(module).parameters) - {"reduction", "validate"}
        assert hyper == set(DECLARATIONS[name].params), name


def test_an_unknown_hyperparameter_is_refused_by_name():
    with pytest.raises(TypeError, match="FocalLoss.*'gama'"):
        calibnb.losses.FocalLoss(gama=2)
    with pytest.raises(TypeError, match="focal_loss has no hyper-parameter 'gama'"):
        DECLARATIONS["focal_loss"].checked(gama=2)


def test_the_trainer_knows_no_loss_class():
    """The training loop calls the hooks of :class:`calibnb.losses.base.TrainingLoss` on any loss
    (issue 26, item 5): it imports no loss class and tests no loss's type."""
    import ast
    from pathlib import Path

    from calibnb.losses.base import TrainingLoss

    assert all(issubclass(module, TrainingLoss) for module in LOSSES.values())
    train = Path(calibnb.__file__).parent / "train"
    for path in train.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("losses"):
                assert {a.name for a in node.names} <= {"get_loss", "LOSSES"}, path
            if isinstance(node, ast.ImportFrom) and ".losses." in f".{node.module or ''}.":
                assert not (node.module or "").startswith("losses."), (path, node.module)
        assert "Loss)" not in path.read_text(), path  # no isinstance(..., SomeLoss)
