"""Issue 25, item 8: random damage written into a finished run folder (a truncated file, a flipped bit,
planted bytes, a symlink to another file, a deleted file) never gives a wrong answer silently.

Every reader of the folder (the results table, its logits, its history, ``prune --dry-run``) either
refuses with an error naming the damaged file, or gives exactly the untouched result: a finished
run's ``metrics.json`` is sealed (:func:`calibnb.atomic.seal`: the sha256 of every file beside it,
and its own), so even a flipped digit that keeps a number in its range is seen.
"""

from __future__ import annotations

import io
import shutil
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibnb import runs
from calibnb.__main__ import main as cli

TRAIN = Path(__file__).resolve().parents[1] / "nbs" / "train.md"
FILES = ["params.yaml", "metrics.json", "logits_val.npz", "logits_test.npz", "history.csv", "version.json"]
DAMAGE = ["truncate", "flip", "plant", "symlink", "delete"]
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DEEP = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A sweep of one finished real training run (tiny), and its sweep file, in ``root``."""
    root = tmp_path_factory.mktemp("finished")
    (root / "sweep.yaml").write_text(yaml.safe_dump({
        "notebook": str(TRAIN), "out_root": str(root / "runs"), "runner": "train",
        "params": {"epochs": 1, "train_size": 300, "val_size": 200, "model_params": {"hidden": [16]}},
        "grid": {"loss": "dual_focal_loss", "gamma": [1, 2]},
        "select": {"by": "loss", "params": ["gamma"], "among": ["dual_focal_loss"]}}))
    runs.sweep(root / "sweep.yaml")
    return root


@pytest.fixture(scope="module")
def untouched(finished, tmp_path_factory) -> dict:
    """What every reader gives for the undamaged sweep (read from a copy, as the damaged ones are)."""
    return outcomes(copy(finished, tmp_path_factory))


def copy(finished: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(finished, root, dirs_exist_ok=True)
    config = root / "sweep.yaml"
    config.write_text(config.read_text().replace(str(finished), str(root)))
    return root


def outcomes(root: Path) -> dict:
    """What each reader gives for the sweep in ``root``: a value, or ``("error", message)``."""
    def attempt(read):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return read()
        except ValueError as error:
            return ("error", str(error))

    table = attempt(lambda: runs.load_results(root / "runs").sort_values("gamma").reset_index(drop=True))
    if isinstance(table, tuple) or table.empty:
        return {"table": table}
    results = {"table": table.assign(run_dir=[Path(d).name for d in table["run_dir"]])}  # where the copy lies aside
    results["test logits"] = attempt(lambda: runs.pooled_logits(table, "test"))
    results["val logits"] = attempt(lambda: runs.pooled_logits(table, "val"))
    results["history"] = attempt(lambda: runs.histories(table.assign(seed=table["gamma"])))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli(["prune", str(root / "sweep.yaml"), "--dry-run"])
    out, err = out.getvalue(), err.getvalue()
    results["prune --dry-run"] = ("error", err.strip()) if code else sorted(Path(p).name for p in out.split()[2::3])
    if code:
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return results


def same(a, b) -> bool:
    """Equal results: logits tuples array by array, tables record by record, the rest by ``==``."""
    kinds = {type(x).__name__ + ("-error" if isinstance(x, tuple) and isinstance(x[0], str) else "") for x in (a, b)}
    if len(kinds) != 1:
        return False
    if isinstance(a, tuple) and isinstance(a[0], np.ndarray):
        return all(np.array_equal(x, y) for x, y in zip(a, b))
    if hasattr(a, "to_dict"):
        return repr(a.to_dict("records")) == repr(b.to_dict("records"))
    return a == b


def damage(path: Path, kind: str, where: float, bit: int, planted: bytes) -> None:
    data = path.read_bytes()
    at = min(int(where * len(data)), max(len(data) - 1, 0))
    if kind == "truncate":
        path.write_bytes(data[:at])
    elif kind == "flip" and data:
        path.write_bytes(data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:])
    elif kind == "plant":
        path.write_bytes(data[:at] + planted + data[at:])
    elif kind == "symlink":
        other = next(p for p in sorted(path.parent.iterdir()) if p != path and p.is_file())
        path.unlink()
        path.symlink_to(other.name)
    elif kind == "delete":
        path.unlink()


def check_damage(finished, untouched, tmp_path_factory, run, name, kind, where, bit, planted):
    root = copy(finished, tmp_path_factory)
    folder = sorted((root / "runs").iterdir())[run]
    damage(folder / name, kind, where, bit, planted)
    after = outcomes(root)
    if name == "metrics.json" and kind == "delete":  # the right answer: that run is unfinished now
        assert folder.name not in set(after["table"]["run_dir"]) and len(after["table"]) == len(untouched["table"]) - 1
        assert folder.name in after["prune --dry-run"][1]  # prune refuses, naming it
        return
    for reader, result in after.items():
        if isinstance(result, tuple) and isinstance(result[0], str):
            assert name in result[1], (reader, result[1])
        else:
            assert reader in untouched and same(result, untouched[reader]), (reader, kind, name)
    shutil.rmtree(root)


damages = dict(run=st.integers(0, 1), name=st.sampled_from(FILES), kind=st.sampled_from(DAMAGE),
               where=st.floats(0, 1), bit=st.integers(0, 7), planted=st.binary(min_size=1, max_size=16))


@FAST
@given(**damages)
def test_damage_to_a_finished_run_is_refused_by_name_or_changes_nothing(finished, untouched, tmp_path_factory, **case):
    check_damage(finished, untouched, tmp_path_factory, **case)


@pytest.mark.slow
@DEEP
@given(**damages)
def test_damage_to_a_finished_run_deeply(finished, untouched, tmp_path_factory, **case):
    check_damage(finished, untouched, tmp_path_factory, **case)
