"""Where a run lives: one folder per parameter set, named so a person can read it."""

from __future__ import annotations

import hashlib
import json
import re

#: Parameters that say *how* or *where* a run executes, not *what* it computes; they do not
#: change a run's identity (its folder name), so a run finished on a GPU is not redone on a CPU.
EXECUTION_KEYS = frozenset({"out_dir", "device", "num_workers", "progress", "compile", "resume", "log_every", "verify_data"})


def identity(params: dict) -> dict:
    """The parameters that define what a run computes (all but :data:`EXECUTION_KEYS`)."""
    return {k: v for k, v in sorted(params.items()) if k not in EXECUTION_KEYS}


def run_name(params: dict) -> str:
    """A readable, unique folder name: ``<dataset>-<model>-<loss>-<hash>-seed<seed>``.

    Missing parts are left out (``run-<hash>`` when there is no dataset, model or loss).

    The 8-hex-digit hash covers every identity parameter, so two runs that differ in any of
    them (γ, λ, epochs, ...) never share a folder, and the same parameters always map to the
    same folder (which is how a sweep recognises finished runs).
    """
    ident = identity(params)
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    parts = [str(ident.get(key, "")) for key in ("dataset", "model", "loss")]
    stem = "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p) for p in parts if p) or "run"
    seed = ident.get("seed")
    return f"{stem}-{digest[:8]}" + (f"-seed{seed}" if seed is not None else "")
