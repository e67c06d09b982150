"""Where a run lives: one folder per run, named from its canonical parameters so a person can read it
and equal runs always meet in the same folder."""

from __future__ import annotations

import re

from .._validation import check_type
from ..train.config import EXECUTION_KEYS, parameters_hash

__all__ = ["EXECUTION_KEYS", "fingerprint", "identity", "run_name"]


def identity(params: dict) -> dict:
    """The parameters that define what a run computes (all but :data:`EXECUTION_KEYS`)."""
    check_type(params, "params", dict, "a dict of parameters")
    return {k: v for k, v in sorted(params.items()) if k not in EXECUTION_KEYS}


def fingerprint(params: dict, defaults: dict | None = None) -> str:
    """The sha256 of the run's identity parameters that differ from ``defaults``.

    Leaving out the values equal to their defaults makes the fingerprint of a run the same
    whether its defaults were spelled out or not, and keeps it unchanged when a new parameter
    (with a default) is added to the notebook. Numbers compare by value: ``3`` and ``3.0`` are
    one γ.
    """
    defaults = defaults or {}
    return parameters_hash({k: v for k, v in identity(params).items()
                            if k not in defaults or parameters_hash({k: defaults[k]}) != parameters_hash({k: v})})


def run_name(params: dict, defaults: dict | None = None) -> str:
    """A readable, unique folder name: ``<dataset>-<model>-<loss>-<hash>-seed<seed>``.

    ``params`` are a run's canonical parameters and ``defaults`` the notebook's declared ones
    (:func:`calibnb.runs.canonical_parameters` gives both), so the same run gets the
    same name however it was spelled. Missing parts are left out (``run-<hash>`` when there is
    no dataset, model or loss). The 8-hex-digit hash is ``fingerprint()``'s: two runs that
    differ in any identity parameter (γ, λ, epochs, ...) never share a folder.
    """
    check_type(defaults or {}, "defaults", dict, "a dict of the notebook's declared parameters")
    merged = {**(defaults or {}), **identity(params)}
    parts = [str(merged.get(key) or "") for key in ("dataset", "model", "loss")]
    stem = "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p) for p in parts if p) or "run"
    seed = merged.get("seed")
    return f"{stem}-{fingerprint(params, defaults)[:8]}" + (f"-seed{seed}" if seed is not None else "")
