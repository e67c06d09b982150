"""A Ctrl-C or SIGTERM that lands while the command line imports torch, scipy or papermill is held
until the imports end and then ends the command as any other: ``error: interrupted``, status 130
(143). Unheld, importing torch aborted the process (status -6, pybind11's ``std::terminate``) and
scipy's array-API shim left CPython set to kill itself with SIGINT at exit (status -2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibnb.__main__ import Terminated, _import


@pytest.fixture
def module_that_signals(tmp_path, monkeypatch):
    """A module whose import sends this process a signal halfway and records that it finished."""
    def make(sig: int) -> str:
        name = f"signals_midway_{sig}"
        (tmp_path / f"{name}.py").write_text(
            f"import os\nos.kill(os.getpid(), {sig})\nimport time\ntime.sleep(0.05)\nFINISHED = True\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name
    return make


@pytest.mark.parametrize("sig, raised", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_signal_during_an_import_is_held_until_the_import_ends(module_that_signals, sig, raised):
    name = module_that_signals(sig)
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),  # as in a terminal
                signal.SIGTERM: signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(Terminated()))}
    try:
        with pytest.raises(raised) as caught:
            _import(name)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    assert sys.modules[name].FINISHED and type(caught.value) is raised


def test_an_ignored_ctrl_c_stays_ignored_during_an_import(module_that_signals):
    name = module_that_signals(signal.SIGINT)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _import(name)  # nothing raised: the shell asked for Ctrl-C to be ignored
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sys.modules[name].FINISHED


def test_imports_without_a_signal_raise_nothing():
    _import("json", "calibnb.metrics")
    assert "calibnb.metrics" in sys.modules


@pytest.mark.slow
@pytest.mark.parametrize("seconds", [0.15, 0.4, 0.8, 1.2, 1.8])
def test_ctrl_c_while_the_command_line_imports_prints_one_line(tmp_path, seconds):
    """The moments span the imports of ``calibnb run`` (torch, scipy, papermill) and the kernel's
    start on this machine; the process exits 130 with one ``error:`` line, never by a signal or
    with a traceback."""
    toy = Path(__file__).parent / "data" / "toy_run.md"
    process = subprocess.Popen([sys.executable, "-m", "calibnb", "run", str(toy), "--out", str(tmp_path / "r")],
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(seconds)
    os.kill(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
