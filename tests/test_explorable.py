"""calibnb.explorable: every frame of a movable figure is calibnb's own computation, the HTML is
an accessible slider over JSON data that a static page can show, and bad input is refused by name.

The browser side (the slider moves, the readout and the drawing follow, no console error) is
tests/test_browser_explorable.py, on the built book and on a bare page holding one figure."""

import html
import json
import re
import warnings

import numpy as np
import pytest
from scipy.special import expit, logit, softmax

from calibnb import explorable
from calibnb.calibration import EdgeOfSearchWarning, FocalTemperatureScaling
from calibnb.metrics import ece, reliability_table
from calibnb.synthetic import overconfident_logits
from calibnb.theory import binary_focal_calibration, temperature_bounds

RTOL = 10.0 ** (1 - explorable.DIGITS)  # numbers are written to DIGITS significant digits


def layer(frame, kind, style):
    (found,) = [x for x in frame["layers"] if x["kind"] == kind and x["style"] == style]
    return found


def data_of(figure) -> dict:
    """The JSON a page carries, read back from the HTML as the browser reads it."""
    match = re.search(r'<script type="application/json" class="explorable-data">(.*?)</script>',
                      figure._repr_html_(), re.S)
    return json.loads(match[1])


@pytest.fixture(scope="module")
def logits_labels():
    z, y, _ = overconfident_logits(3000, 10, seed=3)
    return z, y


def small_fit(search="grid"):
    """FTS on a small fixed grid (its edge may hold the optimum, which warns: not the point here)."""
    z, y, _ = overconfident_logits(800, 5, seed=0)
    fts = FocalTemperatureScaling(gammas=[0.0, 0.5, 1.0, 2.0], temperatures=np.linspace(0.5, 4, 36), search=search)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EdgeOfSearchWarning)
        return fts.fit(z, y)


@pytest.fixture(scope="module")
def fitted_fts():
    return small_fit()


def test_focal_map_frames_are_the_theory_maps():
    gammas = [0.0, 0.5, 3.0, 4.0]
    figure = explorable.focal_map(gammas, n_points=41, initial=3.0)
    spec = data_of(figure)
    q = np.asarray(spec["grids"]["q"])
    np.testing.assert_allclose(q, np.linspace(0, 1, 41))
    assert spec["initial"] == 2 and spec["values"] == gammas
    for gamma, frame in zip(gammas, spec["frames"]):
        np.testing.assert_allclose(layer(frame, "line", "main")["y"], binary_focal_calibration(q, gamma),
                                   rtol=RTOL, atol=1e-12)
        t_low, t_high = temperature_bounds(gamma)
        with np.errstate(divide="ignore"):
            s = logit(q)
        np.testing.assert_allclose(layer(frame, "line", "bound")["y"], expit(s / t_low), rtol=RTOL, atol=1e-12)
        np.testing.assert_allclose(layer(frame, "line", "bound2")["y"], expit(s / t_high), rtol=RTOL, atol=1e-12)
        assert f"T = {t_low:.3f}" in frame["readout"] and f"T = {t_high:.3f}" in frame["readout"]
        marked = binary_focal_calibration(explorable.MARKED_Q, gamma)
        assert layer(frame, "points", "marker")["y"] == [pytest.approx(marked, rel=RTOL)]
        assert f"p̂({explorable.MARKED_Q:g}) = {marked:.3f}" in frame["readout"]
    # Proposition 3 in the frames: above 1/2 the map lies between the two temperature maps
    upper = q > 0.5
    frame = spec["frames"][3]
    low, mid, high = (np.asarray(layer(frame, "line", s)["y"])[upper] for s in ("bound2", "main", "bound"))
    assert np.all(low <= mid * (1 + RTOL)) and np.all(mid <= high * (1 + RTOL))


@pytest.mark.parametrize("binning", ["width", "mass"])
def test_reliability_frames_are_the_metrics(logits_labels, binning):
    """Each frame is calibnb.metrics' reliability table of softmax(z / T), and the ECE it computes
    from that table's own bins is calibnb.metrics.ece with the same bins, to 1e-12 (equal-width
    bins at T = 0.5 leave the low-confidence bins empty)."""
    z, y = logits_labels
    temperatures = [0.5, 1.0, 2.0, 3.0]
    figure = explorable.reliability_under_temperature(z, y, temperatures, n_bins=10, binning=binning)
    spec = data_of(figure)
    assert spec["initial"] == 1
    eces = []
    for t, frame, kept in zip(temperatures, spec["frames"], figure.frames):
        probs = softmax(z / t, axis=1)
        table = reliability_table(probs, y, 10, binning)
        table = table[table["count"] > 0]
        bars = layer(frame, "bars", "bar")
        np.testing.assert_allclose(bars["x0"], table["lo"], rtol=RTOL)
        np.testing.assert_allclose(bars["x1"], table["hi"], rtol=RTOL)
        np.testing.assert_allclose(bars["y1"], table["accuracy"], rtol=RTOL)
        gaps = layer(frame, "bars", "gap")
        np.testing.assert_allclose(gaps["y0"], table["accuracy"], rtol=RTOL)
        np.testing.assert_allclose(gaps["y1"], table["confidence"], rtol=RTOL)
        expected = ece(probs, y, 10, binning)
        assert kept["ece"] == pytest.approx(expected, rel=0, abs=1e-12)
        assert frame["ece"] == kept["ece"]  # the page carries it unrounded
        assert f"ECE = {100 * expected:.2f} %" in frame["readout"]
        eces.append(frame["ece"])
    if binning == "width":
        assert len(layer(spec["frames"][0], "bars", "bar")["x0"]) < 10  # empty bins at T = 0.5
    # the data are over-confident by a factor 2: the ECE falls from T = 0.5 towards T = 2
    assert eces[0] > eces[1] > eces[2]


def test_fts_valley_frames_are_the_fitted_surface(fitted_fts):
    fts = fitted_fts
    spec = data_of(explorable.fts_valley(fts))
    np.testing.assert_allclose(spec["grids"]["T"], fts.temperatures_, rtol=RTOL)
    assert spec["values"] == list(fts.gammas_)
    assert spec["values"][spec["initial"]] == fts.gamma_
    for row, frame in zip(fts.scores_, spec["frames"]):
        np.testing.assert_allclose(layer(frame, "line", "main")["y"], row, rtol=RTOL)
        assert frame["best"][0] == pytest.approx(fts.temperatures_[row.argmin()])
        assert frame["best"][1] == pytest.approx(row.min(), rel=RTOL)
    (chosen,) = [x for x in spec["static"] if x["style"] == "chosen"]
    assert chosen["x"] == [pytest.approx(fts.temperature_)]
    assert chosen["y"] == [pytest.approx(fts.best_score_, rel=RTOL)]
    # the surface drawn is the paper's loop, not only the fast grid's
    np.testing.assert_allclose(small_fit("loop").scores_, fts.scores_, rtol=1e-9, atol=1e-12)
    assert spec["axes"]["y"]["min"] <= fts.scores_.min() and spec["axes"]["y"]["max"] >= fts.scores_.max()


def test_html_is_an_accessible_slider_with_a_readout():
    figure = explorable.focal_map([0.0, 1.0, 2.0], n_points=11, initial=1.0)
    page = figure._repr_html_()
    root = re.match(r'<div class="explorable" role="group" aria-label="([^"]+)">', page)
    assert root and len(html.unescape(root[1])) >= 20
    ident = re.search(r'<input type="range" id="([\w-]+)" min="0" max="2" step="1" value="1"', page)[1]
    assert f'<label for="{ident}">γ</label>' in page
    assert f'<output for="{ident}" aria-live="polite">{html.escape(figure.frames[1]["readout"])}</output>' in page
    assert 'aria-valuetext="γ = 1"' in page
    # the data, then the viewer that draws them (the same in every figure), and nothing else
    script, style = explorable.viewer()
    assert page.count("</script>") == 2
    assert page.endswith(f"<style>{style}</style><script>{script}</script></div>")
    assert "calibnbExplorable" in script and ".explorable-plot" in style
    assert figure._repr_html_() == page  # the same figure, the same HTML (a stable cache key)


def test_data_cannot_close_its_script_element():
    figure = explorable.focal_map([0.0, 1.0], n_points=5)
    figure.label = "a label with </script><script>alert(1)</script> in it"
    figure.frames[0]["readout"] = "</script>"
    page = figure._repr_html_()
    assert page.count("</script>") == 2  # the data's and the viewer's
    assert data_of(figure)["frames"][0]["readout"] == "</script>"


def test_page_weight_stays_small(logits_labels, fitted_fts):
    """The three figures the book shows, at their defaults, well under the 1.5 MB a page may add."""
    z, y = logits_labels
    for figure in (explorable.focal_map(), explorable.reliability_under_temperature(z, y),
                   explorable.fts_valley(fitted_fts)):
        assert len(figure._repr_html_().encode()) < 400_000


@pytest.mark.parametrize("call, name", [
    (lambda: explorable.focal_map([1.0]), "gammas"),
    (lambda: explorable.focal_map([1.0, 0.5]), "gammas"),
    (lambda: explorable.focal_map([-0.5, 1.0]), "gammas"),
    (lambda: explorable.focal_map([0.0, float("nan")]), "gammas"),
    (lambda: explorable.focal_map(np.arange(300.0)), "gammas"),
    (lambda: explorable.focal_map(n_points=2), "n_points"),
    (lambda: explorable.focal_map(initial=float("inf")), "initial"),
])
def test_focal_map_refuses_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("change, name", [
    ({"temperatures": [0.0, 1.0]}, "temperatures"),
    ({"temperatures": [2.0, 1.0]}, "temperatures"),
    ({"n_bins": 0}, "n_bins"),
    ({"binning": "quantile"}, "binning"),
    ({"labels": "wrong length"}, "labels"),
    ({"logits": "nan"}, "logits"),
])
def test_reliability_refuses_bad_input(logits_labels, change, name):
    z, y = logits_labels
    args = {"logits": z[:50], "labels": y[:50], "temperatures": [0.5, 1.0]}
    if change.get("labels") == "wrong length":
        change = {"labels": y[:49]}
    if change.get("logits") == "nan":
        bad = z[:50].copy()
        bad[3, 1] = np.nan
        change = {"logits": bad}
    with pytest.raises(ValueError, match=name):
        explorable.reliability_under_temperature(**(args | change))


def test_fts_valley_refuses_what_it_cannot_draw(fitted_fts):
    with pytest.raises(TypeError, match="estimator"):
        explorable.fts_valley("not an estimator")
    with pytest.raises(ValueError, match="estimator"):
        explorable.fts_valley(FocalTemperatureScaling())  # not fitted
    z, y, _ = overconfident_logits(300, 4, seed=1)
    line = FocalTemperatureScaling(gammas=[0.0, 1.0], temperatures=np.linspace(0.5, 3, 11), search="line")
    with warnings.catch_warnings():  # a small fixed grid may put the optimum at its edge
        warnings.simplefilter("ignore")
        line.fit(z, y)
    with pytest.raises(ValueError, match="estimator"):
        explorable.fts_valley(line)  # the rows of two fixed γ and a line: not the surface
