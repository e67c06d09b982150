"""The sweep files in configs/ expand into valid training configurations with the papers' settings."""

from pathlib import Path

import pytest

from calibnb import runs
from calibnb.train import TrainConfig

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_run_of_every_sweep_is_a_valid_configuration(path):
    expanded = runs.expand_grid(path)
    assert expanded
    for params in expanded:
        TrainConfig.from_params(**{**params, "device": "cpu"})  # raises on any bad parameter
    assert Path(runs.load_config(path)["notebook"]).is_file()


def _select(path, **match):
    return [p for p in runs.expand_grid(path) if all(p.get(k) == v for k, v in match.items())]


def test_sweeps_carry_the_papers_hyper_parameters():
    configs = {p.stem: p for p in CONFIGS}
    dfl = configs["dfl_table1"]
    assert [p["gamma"] for p in _select(dfl, loss="dual_focal_loss", dataset="cifar100")] == [5.0, 6.1, 3.9, 3.4]
    assert [p["gamma"] for p in _select(dfl, loss="dual_focal_loss", dataset="cifar10")] == [5.0, 4.5, 2.6, 5.0]
    fcl = configs["fcl_table4"]
    assert [(p["gamma"], p["lam"]) for p in _select(fcl, loss="focal_calibration_loss", dataset="cifar10")] == [
        (4, 1.5), (4, 1.5), (2, 0.5), (2, 0.5)]
    assert all(p["reduction"] == "mean" for p in _select(fcl, loss="brier_loss"))
    assert len(runs.expand_grid(configs["adafocal_table1"])) == 2 * 4 * 6 * 5
    fts = configs["fts_table1"]
    assert sorted({p["gamma"] for p in _select(fts, loss="focal_loss")}) == [1, 2, 3, 5, 7]
    assert len(runs.expand_grid(fts)) == 2 * (3 + 5) * 5


def test_the_book_sweeps_epochs_override_the_cpu_recipe_as_the_results_page_says():
    """nbs/results.md: Fashion-MNIST for 30 epochs, MNIST-1D for 60, overriding the cpu recipe's 6."""
    from calibnb.train import RECIPES

    configs = {p.stem: p for p in CONFIGS}
    assert RECIPES["cpu"].epochs == 6
    for stem, epochs in (("fashion_mnist_cpu", 30), ("mnist1d_cpu", 60)):
        runs_ = runs.expand_grid(configs[stem])
        assert {p["recipe"] for p in runs_} == {"cpu"} and {p["epochs"] for p in runs_} == {epochs}
        recipe = TrainConfig.from_params(**{**runs_[0], "device": "cpu"}).resolved_recipe
        assert recipe.epochs == epochs and recipe.milestones == tuple(round(m * epochs / 6) for m in (3, 5))
