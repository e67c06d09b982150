"""Issue 25's adversarial run: the cases a careful researcher or an adversary tries on run folders,
checkpoints, results files, configurations and the command line, each judged by its outcome.

Outcomes: ``clear`` (refused: exit status 2 with one ``error:`` line, or a ``ValueError``/
``TypeError``, naming the thing), ``correct`` (the right answer), ``unclear`` (a traceback, or a
message naming neither the argument nor the file), ``silent`` (a wrong answer, no error),
``lost`` (finished data gone) and ``leftover`` (a temporary file or a process left behind).

Every case runs in a subprocess against a checkout given by path, so the same cases count an old
commit and today's: ``python tests/adversarial.py [CHECKOUT]`` prints the table and the counts.
``tests/test_adversarial.py`` (slow) runs them against this checkout and requires every outcome
to be ``clear`` or ``correct``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

TINY = ["-p", "epochs", "1", "-p", "train_size", "300", "-p", "val_size", "200"]
OUTCOMES = ("clear", "correct", "unclear", "silent", "lost", "leftover")


class Checkout:
    """Runs the command line and Python snippets of one checkout in subprocesses."""

    def __init__(self, root: Path, scratch: Path):
        self.root, self.scratch = Path(root).resolve(), scratch
        self.env = {**os.environ, "PYTHONPATH": str(self.root), "TQDM_DISABLE": "1"}
        self.notebook = str(self.root / "nbs" / "train.md")

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "calibnb", *args], capture_output=True, text=True,
                              env=self.env, cwd=self.scratch, timeout=timeout)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return self.cli("run", self.notebook, *args)

    def sweep_file(self, body: str) -> Path:
        """``s.yaml`` in the scratch folder: the training notebook, runs under ``S/``, and ``body``."""
        path = self.scratch / "s.yaml"
        path.write_text(f"notebook: {self.notebook}\nout_root: {self.scratch / 'S'}\n{body}")
        return path

    def py(self, code: str) -> tuple[str, str]:
        """``("ok", printed)`` or ``(exception type, message)`` of a snippet."""
        wrapped = "try:\n" + textwrap.indent(textwrap.dedent(code), "    ") + (
            "\nexcept Exception as e:\n    print('EXC', type(e).__name__, str(e).replace(chr(10), ' '))\n")
        done = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, env=self.env,
                              cwd=self.scratch, timeout=300)
        lines = done.stdout.strip().splitlines()
        if lines and lines[-1].startswith("EXC "):
            _, kind, *message = lines[-1].split(" ", 2)
            return kind, " ".join(message)
        if done.returncode != 0:
            return "crash", done.stderr[-300:]
        return "ok", done.stdout.strip()


def refused(done: subprocess.CompletedProcess, *names: str) -> str:
    """A command line's refusal: ``clear`` when it is one ``error:`` line naming ``names``."""
    if done.returncode == 0:
        return "silent"
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    if "Traceback" in done.stderr or len(errors) != 1 or not all(n in errors[0] for n in names):
        return "unclear"
    return "clear"


def raised(result: tuple[str, str], *names: str) -> str:
    """A function's refusal: ``clear`` for a ``ValueError``/``TypeError`` naming ``names``."""
    kind, message = result
    if kind == "ok":
        return "silent"
    return "clear" if kind in ("ValueError", "TypeError") and all(n in message for n in names) else "unclear"


def temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".tmp" in p.name or ".staging-" in p.name]


# -- the cases ---------------------------------------------------------------------------------------


def finished_run(c: Checkout, name: str, *args: str) -> Path:
    done = c.run(*TINY, *args, "--out", name)
    assert done.returncode == 0, done.stderr[-2000:]
    return c.scratch / name


def case_rerun_with_other_parameters(c):
    run = finished_run(c, "X", "-p", "loss", "focal_loss", "-p", "gamma", "5")
    done = c.run(*TINY, "-p", "loss", "focal_loss", "-p", "gamma", "3", "-p", "val_size", "70000", "--out", "X")
    if "gamma: 5" not in (run / "params.yaml").read_text():
        return "silent"  # the γ = 5 metrics now sit under γ = 3
    return refused(done, "X")


def planted_checkpoint(c, epoch=None) -> tuple[Path, str]:
    """A cross-entropy lr-5.0 checkpoint (or one claiming ``epoch``) in the folder of a focal run."""
    return c.scratch / "P", f"""
import torch
from calibnb.train import loop
real = loop.save_checkpoint
def save_and_stop(out_dir, state):
    if {epoch!r} is not None:
        state["epoch"] = {epoch!r}
    real(out_dir, state)
    raise KeyboardInterrupt
loop.save_checkpoint = save_and_stop
try:
    loop.train(dict(epochs=2, train_size=300, val_size=200, lr=5.0, progress=False, out_dir="{c.scratch / 'P'}"))
except KeyboardInterrupt:
    print("planted")
"""


def resume_over_plant(c, epoch, **run) -> str:
    """Plant a checkpoint in the folder of the run ``run`` (its params.yaml), then resume that run."""
    folder, plant = planted_checkpoint(c, epoch)
    c.py(plant)
    given = {"epochs": 2, "train_size": 300, "val_size": 200, **run}
    (folder / "params.yaml").write_text("".join(f"{k}: {v}\n" for k, v in sorted(given.items())))
    done = c.run(*[a for k, v in given.items() for a in ("-p", k, str(v))], "-p", "resume", "true",
                 "--out", str(folder))
    return refused(done, "checkpoint.pt")


def case_checkpoint_of_another_run(c):
    return resume_over_plant(c, None, loss="focal_loss", gamma=3)


def case_checkpoint_past_the_last_epoch(c):
    return resume_over_plant(c, 99, lr=5.0)


def case_prune_of_an_unfinished_sweep(c):
    sweep = c.sweep_file("runner: train\n"
                         "params: {epochs: 1, train_size: 300, val_size: 200, loss: dual_focal_loss}\n"
                         "grid: {gamma: [1, 2], seed: [1, 2]}\n"
                         "select: {by: loss, params: [gamma], among: [dual_focal_loss]}\n")
    c.py(f"""
from calibnb import runs
plan = runs.plan("{sweep}")
for params, folder, _ in plan[:3]:
    runs.run_training(params, folder)
""")
    before = len(list((c.scratch / "S").rglob("logits_test.npz")))
    done = c.cli("prune", str(sweep))
    after = len(list((c.scratch / "S").rglob("logits_test.npz")))
    if after < before:
        return "lost"
    return refused(done, "not finished")


def results_folder(c, metrics: str, params: bool = True) -> Path:
    folder = c.scratch / "R" / "run"
    folder.mkdir(parents=True)
    if params:
        (folder / "params.yaml").write_text("loss: cross_entropy\nseed: 1\n")
    (folder / "metrics.json").write_text(metrics)
    return folder


GOOD = {m: 0.05 for m in ("ece", "adaece", "classwise_ece", "mce", "nll", "brier", "error", "smooth_ece")}


def metrics_case(text: str, *names: str, params: bool = True):
    def case(c):
        results_folder(c, text, params)
        return raised(c.py(f"from calibnb import runs; print(runs.load_results('{c.scratch / 'R'}').to_dict())"),
                      "metrics.json" if params else "params.yaml", *names)
    return case


def metrics_with(**changes) -> str:
    stage = {**GOOD, **changes.pop("stage", {})}
    return json.dumps({"val": stage, "test": {"pre": stage, "ts": stage, "fts": stage}, "temperature": 1.5,
                       "fts": {"gamma": 0.5, "temperature": 1.2}, "gammas": [], **changes})


def case_a_digit_changed_in_range(c):
    """A finished run's test ECE edited from 0.0x to 0.0y: in range, valid JSON, a different number."""
    run = finished_run(c, "F")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["test"]["pre"]["ece"] = round(metrics["test"]["pre"]["ece"] / 2, 6)
    (run / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True))
    return raised(c.py(f"from calibnb import runs; print(runs.load_results('{c.scratch}').ece.tolist())"),
                  "metrics.json")


def logits_case(logits: str, labels: str, *names: str):
    def case(c):
        return raised(c.py(f"""
import numpy as np
from calibnb.atomic import load_logits
np.savez("{c.scratch / 'l.npz'}", logits=np.array({logits}, dtype=np.float16), labels=np.array({labels}))
print(load_logits("{c.scratch / 'l.npz'}"))
"""), "l.npz", *names)
    return case


def case_validation_and_test_classes_differ(c):
    return raised(c.py("""
import numpy as np
from calibnb.train import evaluate_logits
rng = np.random.default_rng(0)
print(evaluate_logits(rng.normal(size=(50, 3)), rng.integers(0, 3, 50), rng.normal(size=(50, 5)), rng.integers(0, 5, 50)))
"""), "3", "5")


def case_calibrator_of_other_classes(c):
    return raised(c.py("""
import numpy as np
from calibnb.calibration import TemperatureScaling
rng = np.random.default_rng(0)
ts = TemperatureScaling().fit(rng.normal(size=(50, 5)), rng.integers(0, 5, 50))
print(ts.predict_proba(rng.normal(size=(4, 7))))
"""), "7", "5")


def case_gamma_spelled_twice(c):
    done = c.run("-p", "loss", "focal_loss", "-p", "gamma", "3", "-y", "{loss_params: {gamma: 5}}", "--out", "G")
    return refused(done, "gamma")


def case_duplicate_key_in_a_parameter_file(c):
    (c.scratch / "p.yaml").write_text("gamma: 3\nloss: focal_loss\ngamma: 5\n")
    return refused(c.run("-f", "p.yaml", "--out", "F"), "p.yaml", "gamma")


def case_duplicate_key_in_a_sweep_grid(c):
    c.sweep_file("grid:\n  seed: [1]\n  seed: [2]\n")
    return refused(c.cli("sweep", "s.yaml", "--dry-run"), "s.yaml", "seed")


def case_seed_010(c):
    sweep = c.sweep_file("grid: {seed: [010]}\n")
    kind, printed = c.py(f"from calibnb import runs; print(runs.expand_grid('{sweep}')[0]['seed'])")
    return "correct" if (kind, printed) == ("ok", "10") else "silent" if kind == "ok" else "unclear"


def case_epochs_sexagesimal(c):
    sweep = c.sweep_file("grid: {epochs: [2:30]}\n")
    return raised(c.py(f"from calibnb import runs; print(runs.expand_grid('{sweep}')[0]['epochs'])"), "epochs")


def case_misspelled_model_params_key(c):
    c.sweep_file("params: {model_params: {hiden: [8]}}\ngrid: {seed: [1]}\n")
    return refused(c.cli("sweep", "s.yaml", "--dry-run"), "hiden")


def case_selection_among_a_misspelled_loss(c):
    c.sweep_file("grid: {loss: [focal_loss], gamma: [1, 3]}\n"
                 "select: {by: loss, params: [gamma], among: [focal_los]}\n")
    return refused(c.cli("sweep", "s.yaml", "--dry-run"), "focal_los")


def study_case(splits: str, name: str):
    def case(c):
        (c.scratch / "st.yaml").write_text(f"out_root: {c.scratch}/O\n{name}: {splits}\n")
        return raised(c.py(f"from calibnb.runs.posthoc import load_study; print(load_study('{c.scratch}/st.yaml'))"),
                      name)
    return case


def case_plain_papermill_misspelling(c):
    return raised(c.py(f"""
import jupytext, papermill
jupytext.write(jupytext.read("{c.notebook}"), "{c.scratch}/t.ipynb", fmt="ipynb")
try:
    papermill.execute_notebook("{c.scratch}/t.ipynb", "{c.scratch}/o.ipynb", parameters={{"gama": 3, "epochs": 1,
                               "train_size": 300, "val_size": 200}}, progress_bar=False, cwd="{Path(c.notebook).parent}")
except papermill.PapermillExecutionError as error:
    raise ValueError(error.evalue) from None
print("ran")
"""), "gama")


def name_case(*spellings: dict):
    def case(c):
        names = set()
        for params in spellings:
            args = [a for k, v in params.items() for a in ("-y", json.dumps({k: v}))]
            done = c.run(*TINY, *args, "--root", "N")
            if done.returncode != 0:
                return "unclear"
            names.add(Path(done.stdout.strip().splitlines()[-1]).name)
        return "correct" if len(names) == 1 else "silent"
    return case


def _default_signals() -> None:
    """The run starts with Ctrl-C and SIGTERM at their defaults, however the tests were started (a
    background job of a non-interactive shell ignores SIGINT, and Python keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def signal_case(sig: int, seconds: float):
    def case(c):
        process = subprocess.Popen([sys.executable, "-m", "calibnb", "run", c.notebook, *TINY, "--out", "K"],
                                   cwd=c.scratch, env=c.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True, preexec_fn=_default_signals)
        time.sleep(seconds)
        if sig == signal.SIGINT:
            os.killpg(process.pid, sig)  # Ctrl-C in a terminal: the whole foreground group, kernel included
        else:
            process.send_signal(sig)
        _, err = process.communicate(timeout=120)
        if sig == signal.SIGINT and ("Traceback" in err or process.returncode != 130):
            return "unclear"
        resumed = c.run(*TINY, "--out", "K")
        if resumed.returncode != 0:
            return "unclear"
        return "leftover" if temporaries(c.scratch) else "correct"
    return case


def case_billion_laughs(c):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 8)]
    (c.scratch / "bomb.yaml").write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    try:
        done = c.run("-f", "bomb.yaml", "--out", "B")
    except subprocess.TimeoutExpired:
        return "unclear"
    return refused(done) if time.monotonic() - started < 20 else "unclear"


def case_out_is_a_file(c):
    (c.scratch / "afile").write_text("x")
    return refused(c.run(*TINY, "--out", "afile"), "afile")


def case_parameter_file_is_a_folder(c):
    (c.scratch / "afolder").mkdir()
    return refused(c.run("-f", "afolder", "--out", "D"), "afolder")


def case_unknown_executor_key(c):
    c.sweep_file("executor: {name: slurm, slurm_partiton: gpu}\ngrid: {seed: [1]}\n")
    return refused(c.cli("sweep", "s.yaml", "--dry-run"), "slurm_partiton")


def case_slurm_where_there_is_none(c):
    c.sweep_file("executor: {name: slurm}\ngrid: {seed: [1]}\n")
    return refused(c.cli("sweep", "s.yaml"), "slurm")


def case_huge_seed(c):
    return refused(c.run("-p", "seed", "99999999999999999999999", "--out", "H"), "seed")


def case_diverging_run(c):
    done = c.run("-p", "lr", "1e6", "-p", "epochs", "3", "-p", "train_size", "300", "-p", "val_size", "200",
                 "--out", "V")
    outcome = refused(done, "epoch 1")
    return outcome if not (c.scratch / "V" / "checkpoint.pt").exists() else "unclear"


def case_failed_run_in_a_sweep(c):
    c.sweep_file("runner: train\n"
                 "params: {epochs: 1, train_size: 300, val_size: 200}\n"
                 "grid: [{seed: [1]}, {seed: 2, lr: 1.0e+6}]\n")
    return refused(c.cli("sweep", "s.yaml"), "seed2")


CASES = {
    "rerun overwrites params.yaml": case_rerun_with_other_parameters,
    "checkpoint of another run": case_checkpoint_of_another_run,
    "checkpoint past the last epoch": case_checkpoint_past_the_last_epoch,
    "prune of an unfinished sweep": case_prune_of_an_unfinished_sweep,
    "metrics: ECE -0.5": metrics_case(metrics_with(stage={"ece": -0.5}), "ece"),
    "metrics: ECE 7.5": metrics_case(metrics_with(stage={"ece": 7.5}), "ece"),
    "metrics: NaN": metrics_case(metrics_with().replace('"nll": 0.05', '"nll": NaN'), "NaN"),
    "metrics: Infinity": metrics_case(metrics_with().replace('"nll": 0.05', '"nll": Infinity'), "Infinity"),
    "metrics: temperature -2": metrics_case(metrics_with(temperature=-2), "temperature"),
    "metrics: {}": metrics_case("{}"),
    "metrics: misspelled key": metrics_case(metrics_with(stage={"eec": 0.1}), "eec"),
    "metrics: duplicate key": metrics_case(metrics_with().replace('"temperature": 1.5', '"temperature": 1.5, "temperature": 9'),
                                           "temperature"),
    "metrics without params.yaml": metrics_case(metrics_with(), params=False),
    "metrics: a test ECE halved, in range": case_a_digit_changed_in_range,
    "logits: 1-D with 3 labels for 5": logits_case("[1, 2, 3, 4, 5]", "[0, 1, 0]"),
    "logits: NaN": logits_case("[[1, float('nan')], [0, 1]]", "[0, 1]"),
    "logits: label -1": logits_case("[[1, 2], [0, 1]]", "[0, -1]"),
    "logits: label 7 of 5 classes": logits_case("[[1, 2, 3, 4, 5]]", "[7]"),
    "evaluate: 3 val classes, 5 test": case_validation_and_test_classes_differ,
    "calibrator of 5 classes on 7": case_calibrator_of_other_classes,
    "-p gamma 3 -y loss_params.gamma 5": case_gamma_spelled_twice,
    "duplicate key in -f": case_duplicate_key_in_a_parameter_file,
    "duplicate key in a sweep grid": case_duplicate_key_in_a_sweep_grid,
    "seed 010 is ten": case_seed_010,
    "-p epochs 2:30": case_epochs_sexagesimal,
    "model_params typo at --dry-run": case_misspelled_model_params_key,
    "select.among: [focal_los]": case_selection_among_a_misspelled_loss,
    "study splits [1.7]": study_case("[1.7]", "splits"),
    "study splits [true]": study_case("[true]", "splits"),
    "study splits '12'": study_case("'12'", "splits"),
    "study networks []": study_case("[]", "networks"),
    "plain papermill -p gama 3": case_plain_papermill_misspelling,
    "one name: defaults spelled or not": name_case({}, {"seed": 1, "loss": "cross_entropy", "device": "cpu"}),
    "one name: gamma or loss_params.gamma": name_case({"loss": "focal_loss", "gamma": 3},
                                                      {"loss": "focal_loss", "loss_params": {"gamma": 3}}),
    "SIGKILL of a run, then resume": signal_case(signal.SIGKILL, 5.0),
    "SIGTERM of a run, then resume": signal_case(signal.SIGTERM, 5.0),
    "Ctrl-C of a run": signal_case(signal.SIGINT, 4.0),
    "billion laughs in -f": case_billion_laughs,
    "--out is a file": case_out_is_a_file,
    "-f names a folder": case_parameter_file_is_a_folder,
    "unknown executor key": case_unknown_executor_key,
    "Slurm where there is none": case_slurm_where_there_is_none,
    "-p seed 99999999999999999999999": case_huge_seed,
    "a diverging run (lr 1e6)": case_diverging_run,
    "a failed run inside a sweep": case_failed_run_in_a_sweep,
}


def judge(name: str, root: Path) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        try:
            return CASES[name](Checkout(root, Path(scratch)))
        except Exception as error:  # the case itself could not run: count it, show why
            return f"unclear ({type(error).__name__}: {str(error)[:120]})"


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    counts = Counter()
    for name in CASES:
        outcome = judge(name, root)
        counts[outcome.split(" ")[0]] += 1
        print(f"{outcome:<10}  {name}", flush=True)
    print("  ".join(f"{o}: {counts[o]}" for o in OUTCOMES))
