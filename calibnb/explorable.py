"""Figures a reader moves: a slider steps through frames that calibnb computed beforehand.

The book is a static site, read without a kernel and without the internet, so a figure that
moves cannot compute anything in the reader's browser. Each function here computes every frame
in Python with calibnb (the numbers the prose and the tests rely on) and returns an
:class:`Explorable`, whose HTML (``_repr_html_``, a notebook cell's output) carries the frames
as JSON beside a labelled range input and a readout, followed by the viewer
(``calibnb/_viewer/explorable.js`` and ``.css``, written into the output): it draws the current
frame as SVG and switches frames as the slider moves; it only displays. The output needs nothing
else, so the figure moves in the built book offline, in a notebook, and in a saved page alike.
A chapter shows one in a numbered figure through MyST-NB's ``mystnb: figure`` metadata on the
cell.

- :func:`focal_map` — the binary focal calibration map of Komisarenko & Kull (2024, Prop. 2)
  as γ moves, between Proposition 3's two temperature-scaling maps;
- :func:`reliability_under_temperature` — a reliability diagram of softmax(z / T) and its ECE
  (Guo et al. 2017) as the temperature moves;
- :func:`fts_valley` — focal temperature scaling's validation criterion over T, one γ at a
  time, from a fitted :class:`~calibnb.calibration.FocalTemperatureScaling` (the paper's
  Figure 8 valley).

A frame is a list of layers: ``{"kind": "line" | "points", "x": ..., "y": ..., "style": ...}``
or ``{"kind": "bars", "x0", "x1", "y0", "y1", "style"}``, in data coordinates; ``x`` may name
an array of the figure's ``grids``. Numbers drawn are written to :data:`DIGITS` significant digits.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.special import expit, logit, softmax

from .calibration import FocalTemperatureScaling
from ._validation import check_choice, check_int, check_logits_labels, check_n_bins, check_real, check_vector
from .metrics import reliability_table
from .theory import binary_focal_calibration, temperature_bounds

__all__ = ["Explorable", "focal_map", "reliability_under_temperature", "fts_valley", "viewer", "DIGITS", "MARKED_Q"]

#: The viewer's script and style sheet, package data written into every figure's HTML.
VIEWER = Path(__file__).with_name("_viewer")
#: Significant digits of every number a figure carries (its weight on the page).
DIGITS = 5
#: The prediction whose calibrated value :func:`focal_map` marks and reads out.
MARKED_Q = 0.6
#: The most frames one figure may hold: a slider with more steps is no longer moved step by step.
MAX_FRAMES = 201


def _rounded(values) -> list:
    """Numbers to :data:`DIGITS` significant digits (None for a missing value), for JSON."""
    return [None if not math.isfinite(v) else float(f"{v:.{DIGITS}g}") for v in np.asarray(values, float).ravel()]


@dataclass
class Explorable:
    """A figure whose frames a slider switches between, written as HTML for a notebook output.

    Attributes
    ----------
    label : str
        What the figure shows, for a reader who cannot see it (the element's ``aria-label``).
    parameter : str
        The slider's name as the reader sees it ("γ", "temperature T").
    values : list of float
        The parameter's value in each frame.
    frames : list of dict
        Per frame: ``readout`` (the text beside the slider) and ``layers`` (what is drawn).
    initial : int
        The frame shown first.
    axes : dict
        ``x`` and ``y``: ``label``, ``min``, ``max``, ``ticks`` and ``scale`` ("linear" or "log").
    static : list of dict
        Layers drawn under every frame.
    grids : dict
        Named x arrays that layers share.
    legend : list of dict
        ``label`` and ``style`` of each kind of layer.
    """

    label: str
    parameter: str
    values: list
    frames: list
    initial: int
    axes: dict
    static: list = field(default_factory=list)
    grids: dict = field(default_factory=dict)
    legend: list = field(default_factory=list)

    def spec(self) -> dict:
        """Everything the viewer draws, as JSON-ready data."""
        return {"parameter": self.parameter, "values": self.values, "frames": self.frames,
                "initial": self.initial, "axes": self.axes, "static": self.static,
                "grids": self.grids, "legend": self.legend}

    def _repr_html_(self) -> str:
        data = json.dumps(self.spec(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        data = data.replace("</", "<\\/")  # no "</script>" can end the data early
        script, style = viewer()
        ident = "explorable-" + hashlib.sha1(data.encode()).hexdigest()[:12]
        first = self.frames[self.initial]["readout"]
        return (
            f'<div class="explorable" role="group" aria-label="{html.escape(self.label)}">'
            f'<div class="explorable-plot"></div>'
            f'<div class="explorable-controls">'
            f'<label for="{ident}">{html.escape(self.parameter)}</label>'
            f'<input type="range" id="{ident}" min="0" max="{len(self.frames) - 1}" step="1" '
            f'value="{self.initial}" aria-valuetext="{html.escape(self._value_text(self.initial))}">'
            f'<output for="{ident}" aria-live="polite">{html.escape(first)}</output>'
            f"</div>"
            f'<script type="application/json" class="explorable-data">{data}</script>'
            f"<style>{style}</style><script>{script}</script>"
            f"</div>"
        )

    def _value_text(self, index: int) -> str:
        return f"{self.parameter} = {self.values[index]:g}"

    def __repr__(self) -> str:
        return f"<Explorable {self.label!r}: {len(self.frames)} frames of {self.parameter}>"


@functools.cache
def viewer() -> tuple[str, str]:
    """The viewer's script and style sheet (``calibnb/_viewer/``), as a figure's HTML embeds them."""
    script, style = ((VIEWER / f"explorable.{ext}").read_text(encoding="utf-8") for ext in ("js", "css"))
    if "</" in script or "</" in style:  # inline, "</script>" or "</style>" would end them early
        raise ValueError(f"{VIEWER}: the viewer must not contain '</'")
    return script, style


def _initial(values: np.ndarray, at: float, name: str) -> int:
    """The index of the frame closest to ``at``."""
    at = check_real(at, name)
    return int(np.abs(values - at).argmin())


def _frame_values(values, name: str, minimum=None, strict_minimum=False) -> np.ndarray:
    values = check_vector(values, name)
    if values.size < 2 or values.size > MAX_FRAMES:
        raise ValueError(f"{name} must hold 2 to {MAX_FRAMES} values, got {values.size}")
    if np.any(np.diff(values) <= 0):
        raise ValueError(f"{name} must increase strictly")
    if minimum is not None and (values[0] < minimum or (strict_minimum and values[0] == minimum)):
        raise ValueError(f"{name} must be {'>' if strict_minimum else '>='} {minimum}, got {values[0]:g}")
    return values


def _linear_ticks(lo: float, hi: float) -> list:
    """Round tick positions within [lo, hi]: steps of 1, 2 or 5 times a power of ten, 3 to 7 ticks."""
    for step in (10.0 ** k * m for k in range(math.floor(math.log10(hi - lo)) - 1, 3) for m in (1, 2, 5)):
        ticks = np.arange(math.ceil(lo / step), math.floor(hi / step) + 1) * step
        if ticks.size <= 7:
            return _rounded(ticks)
    return _rounded([lo, hi])


def _unit_axis(label: str) -> dict:
    return {"label": label, "min": 0.0, "max": 1.0, "ticks": [0, 0.25, 0.5, 0.75, 1], "scale": "linear"}


def focal_map(gammas=np.round(np.arange(0, 51) * 0.1, 10), n_points: int = 121, initial: float = 3.0) -> Explorable:
    """The binary focal calibration map ``p̂(q)`` (Komisarenko & Kull 2024, Prop. 2) as γ moves.

    Each frame draws ``p̂`` for one γ (``calibnb.theory.binary_focal_calibration``) between
    the two temperature-scaling maps ``sigmoid(logit(q) / T)`` of Proposition 3
    (``calibnb.theory.temperature_bounds``): below ``T_low`` and above ``T_high`` for
    ``q > 1/2``, the reverse below. ``gammas`` (2 to ``MAX_FRAMES`` increasing values >= 0,
    where the bounds hold) are the frames; ``n_points`` the q grid on [0, 1].
    """
    gammas = _frame_values(gammas, "gammas", minimum=0.0)
    n_points = check_int(n_points, "n_points", minimum=3, maximum=2001)
    q = np.linspace(0.0, 1.0, n_points)
    with np.errstate(divide="ignore"):
        s = logit(q)
    frames = []
    for gamma in gammas:
        t_low, t_high = temperature_bounds(gamma)
        mapped = binary_focal_calibration(q, gamma)
        at = float(binary_focal_calibration(MARKED_Q, gamma))
        frames.append({
            "readout": (f"γ = {gamma:g}: p̂({MARKED_Q:g}) = {at:.3f}; the map lies between temperature "
                        f"scaling with T = {t_low:.3f} and T = {t_high:.3f}"),
            "layers": [
                {"kind": "line", "x": "q", "y": _rounded(expit(s / t_low)), "style": "bound"},
                {"kind": "line", "x": "q", "y": _rounded(expit(s / t_high)), "style": "bound2"},
                {"kind": "line", "x": "q", "y": _rounded(mapped), "style": "main"},
                {"kind": "points", "x": [MARKED_Q], "y": _rounded([at]), "style": "marker"},
            ],
        })
    return Explorable(
        label=("The binary focal calibration map p-hat of q for a focal-loss parameter gamma chosen "
               "with the slider, drawn between the two temperature-scaling maps of Proposition 3; "
               f"the readout gives p-hat({MARKED_Q:g}) and the two temperatures."),
        parameter="γ", values=_rounded(gammas), frames=frames,
        initial=_initial(gammas, initial, "initial"),
        axes={"x": _unit_axis("predicted probability q"), "y": _unit_axis("calibrated probability p̂(q)")},
        static=[{"kind": "line", "x": [0, 1], "y": [0, 1], "style": "reference"}],
        grids={"q": _rounded(q)},
        legend=[{"label": "focal calibration map p̂", "style": "main"},
                {"label": "TS with T_low = 1/(γ+1)", "style": "bound"},
                {"label": "TS with T_high", "style": "bound2"},
                {"label": "identity", "style": "reference"}],
    )


def reliability_under_temperature(logits, labels, temperatures=np.round(np.arange(10, 71) * 0.05, 10),
                                  n_bins: int = 15, binning: str = "width",
                                  initial: float = 1.0) -> Explorable:
    """A reliability diagram of ``softmax(logits / T)`` and its ECE as the temperature moves.

    Each frame is :func:`calibnb.metrics.reliability_table` of one T (bars: each non-empty bin's
    accuracy over its edges; a narrower bar: the gap to its mean confidence) and the ECE of those
    same bins, ``sum_b (n_b / N) |acc_b - conf_b|`` (Guo et al. 2017, Eq. 3), in the readout and,
    unrounded, as the frame's ``ece``: each frame bins the probabilities once, and its ECE is
    :func:`calibnb.metrics.ece` with ``n_bins`` and ``binning``. Temperature scaling leaves the
    predicted class, hence the accuracy, unchanged: only the confidences move.
    """
    z, y = check_logits_labels(logits, labels)
    temperatures = _frame_values(temperatures, "temperatures", minimum=0.0, strict_minimum=True)
    n_bins = check_n_bins(n_bins)
    binning = check_choice(binning, "binning", ("width", "mass"))
    accuracy = float(np.mean(z.argmax(axis=1) == y))
    kind = "equal-width" if binning == "width" else "equal-mass"
    frames = []
    for t in temperatures:
        probs = softmax(z / t, axis=1)
        table = reliability_table(probs, y, n_bins, binning)
        table = table[table["count"] > 0]  # an empty bin has no mean, and no weight in the ECE
        error = float((table["count"] * table["gap"].abs()).sum() / len(y))  # the table's own ECE
        width = (table["hi"] - table["lo"]).to_numpy()
        centre = (table["confidence"]).to_numpy()
        frames.append({
            "readout": (f"T = {t:.2f}: ECE = {100 * error:.2f} % ({n_bins} {kind} bins); "
                        f"mean confidence {100 * probs.max(axis=1).mean():.1f} %, "
                        f"accuracy {100 * accuracy:.1f} %"),
            "ece": error,
            "layers": [
                {"kind": "bars", "x0": _rounded(table["lo"]), "x1": _rounded(table["hi"]),
                 "y0": [0.0] * len(table), "y1": _rounded(table["accuracy"]), "style": "bar"},
                {"kind": "bars", "x0": _rounded(centre - width / 6), "x1": _rounded(centre + width / 6),
                 "y0": _rounded(table["accuracy"]), "y1": _rounded(table["confidence"]), "style": "gap"},
                {"kind": "points", "x": _rounded(table["confidence"]), "y": _rounded(table["accuracy"]),
                 "style": "marker"},
            ],
        })
    return Explorable(
        label=(f"Reliability diagram with {n_bins} {kind} bins of softmax(z / T) for a temperature "
               "T chosen with the slider: accuracy per bin against the diagonal of perfect "
               "calibration, with the expected calibration error in the readout."),
        parameter="temperature T", values=_rounded(temperatures), frames=frames,
        initial=_initial(temperatures, initial, "initial"),
        axes={"x": _unit_axis("confidence (bin edges; dot: mean confidence)"),
              "y": _unit_axis("accuracy in the bin")},
        static=[{"kind": "line", "x": [0, 1], "y": [0, 1], "style": "reference"}],
        legend=[{"label": "accuracy per bin", "style": "bar"},
                {"label": "gap to the bin's confidence", "style": "gap"},
                {"label": "perfect calibration", "style": "reference"}],
    )


def fts_valley(estimator) -> Explorable:
    """Focal temperature scaling's validation criterion over T, one γ per frame (the valley of
    the paper's Figure 8; Komisarenko & Kull 2024, Section 5.1).

    ``estimator`` is a :class:`~calibnb.calibration.FocalTemperatureScaling` fitted with
    ``search="grid"`` or ``"loop"``: each frame is one row of its ``scores_`` (over
    ``temperatures_``) with that row's minimum marked; every row is drawn faintly underneath,
    and the selected (γ, T) is marked in all frames. The y axis is logarithmic.
    """
    if not isinstance(estimator, FocalTemperatureScaling):
        raise TypeError(f"estimator must be a FocalTemperatureScaling, got {type(estimator).__name__}")
    scores = getattr(estimator, "scores_", None)
    gammas, temps = getattr(estimator, "gammas_", None), getattr(estimator, "temperatures_", None)
    if (estimator.search == "line" or scores is None or gammas is None
            or np.shape(scores) != (np.size(gammas), np.size(temps))):
        raise ValueError("estimator must be fitted with search='grid' or 'loop' (a full scores_ surface)")
    if not 2 <= gammas.size <= MAX_FRAMES:
        raise ValueError(f"estimator has {gammas.size} γ values; a valley needs 2 to {MAX_FRAMES}")
    scores = np.asarray(scores, float)
    if not np.all(np.isfinite(scores)) or np.any(scores <= 0):
        raise ValueError("estimator.scores_ must be finite and positive to be drawn on a log scale")
    criterion = "validation ECE" if estimator.criterion == "ece" else "validation NLL"
    lo, hi = 10 ** math.floor(math.log10(scores.min())), 10 ** math.ceil(math.log10(scores.max()))
    ticks = [10.0 ** k for k in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    best = [(temps[row.argmin()], row.min()) for row in scores]
    frames = [{
        "readout": (f"γ = {g:g}: lowest {criterion} {s:.4f} at T = {t:.2f} "
                    f"(the fit selects γ = {estimator.gamma_:g}, T = {estimator.temperature_:.2f})"),
        "best": [float(t), float(f"{s:.{DIGITS}g}")],
        "layers": [{"kind": "line", "x": "T", "y": _rounded(row), "style": "main"},
                   {"kind": "points", "x": [float(t)], "y": _rounded([s]), "style": "marker"}],
    } for g, row, (t, s) in zip(gammas, scores, best)]
    return Explorable(
        label=(f"Focal temperature scaling's {criterion} against the temperature T for a gamma "
               "chosen with the slider, every other gamma drawn faintly; the readout gives the "
               "lowest criterion and its temperature."),
        parameter="γ", values=_rounded(gammas), frames=frames,
        initial=int(np.flatnonzero(gammas == estimator.gamma_)[0]),
        axes={"x": {"label": "temperature T", "min": float(temps.min()), "max": float(temps.max()),
                    "ticks": _linear_ticks(temps.min(), temps.max()), "scale": "linear"},
              "y": {"label": f"{criterion} (log scale)", "min": lo, "max": hi, "ticks": ticks, "scale": "log"}},
        static=[{"kind": "line", "x": "T", "y": _rounded(row), "style": "faint"} for row in scores]
        + [{"kind": "points", "x": [float(estimator.temperature_)], "y": _rounded([estimator.best_score_]),
            "style": "chosen"}],
        grids={"T": _rounded(temps)},
        legend=[{"label": "criterion at this γ", "style": "main"}, {"label": "other γ", "style": "faint"},
                {"label": "selected (γ, T)", "style": "chosen"}],
    )
