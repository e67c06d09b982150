"""Issue 25, item 8: a run, a sweep or a post-hoc study killed at a random moment loses no finished
run, leaves no temporary file once resumed, and leaves no process behind (slow: real processes)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

TOY = Path(__file__).parent / "data" / "toy_run.md"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "calibnb", *args]


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc)."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def kill_at_random(args: list[str], sig: int, seconds: float) -> set[int]:
    """Start ``args``, let it work for ``seconds``, send ``sig``; return the processes it had started."""
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    below = descendants(process.pid)
    process.send_signal(sig)
    process.wait(timeout=60)
    return below


def wait_until_gone(pids: set[int], seconds: float = 20) -> set[int]:
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive(pids)


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_sweep_killed_anywhere_loses_no_finished_run_and_resumes_clean(tmp_path, sig):
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({"notebook": str(TOY), "out_root": str(tmp_path / "runs"),
                                      "grid": {"seed": [1, 2, 3]}}))
    subprocess.run(command("run", str(TOY), "-p", "seed", "1", "--out", str(tmp_path / "runs" / "first")),
                   check=True, capture_output=True)
    finished = snapshot(tmp_path / "runs" / "first")
    seconds = random.Random(sig).uniform(1.0, 6.0)
    below = kill_at_random(command("sweep", str(config)), sig, seconds)
    assert not wait_until_gone(below), f"processes left after {sig!r} at {seconds:.1f} s"
    assert snapshot(tmp_path / "runs" / "first") == finished
    subprocess.run(command("sweep", str(config)), check=True, capture_output=True)
    leftovers = [p for p in tmp_path.rglob("*") if ".tmp" in p.name or ".staging-" in p.name]
    assert not leftovers, leftovers
    assert sum(1 for _ in (tmp_path / "runs").rglob("metrics.json")) == 4  # 'first' and the sweep's 3


def test_a_killed_posthoc_study_leaves_no_worker(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"out_root": str(tmp_path / "out"), "networks": ["cifar10-lenet-5"],
                                     "splits": [1, 2, 3, 4]}))
    below = kill_at_random(command("posthoc", str(study), "-j", "2"), signal.SIGKILL, 6.0)
    assert below, "the study had started no worker: kill later"
    assert not wait_until_gone(below), "post-hoc workers outlived their parent"
    subprocess.run(command("posthoc", str(study), "-j", "2"), check=True, capture_output=True)
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]
    assert len(list((tmp_path / "out").rglob("metrics.json"))) == 4


def test_sigterm_of_a_run_exits_143_with_one_line(tmp_path):
    process = subprocess.Popen(command("run", str(TOY), "--out", str(tmp_path / "r")), stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True)
    time.sleep(2.5)  # the kernel starts in about 2 s; the run takes 4-5 s
    below = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and err.strip().splitlines()[-1] == "error: interrupted (SIGTERM)", err
    assert not wait_until_gone(below)
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]
