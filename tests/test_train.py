"""calibnb.train: configuration checks, recipes, and short real runs on Fashion-MNIST."""

import json

import numpy as np
import pytest

from calibnb.atomic import SEAL_KEYS
from calibnb.runs import load_logits
from calibnb.train import RECIPES, TrainConfig, evaluate_logits, train
from calibnb.train.recipes import Recipe
from calibnb.train import loop as train_loop

TINY = dict(train_size=600, val_size=400, epochs=2, model_params={"hidden": [32]}, progress=False)


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"loss": "focal"}, ValueError, "loss must be one of"),
        ({"dataset": "imagenet21k"}, ValueError, "dataset must be one of"),
        ({"model": "vit"}, ValueError, "model must be one of"),
        ({"recipe": "fast"}, ValueError, "recipe must be one of"),
        ({"epochs": -1}, ValueError, "epochs must be >= 1"),
        ({"epochs": 2.5}, TypeError, "epochs must be an integer"),
        ({"lr": 0.0}, ValueError, "lr must be > 0"),
        ({"loss": "focal_loss", "loss_params": {"gamma": -1}}, ValueError, "loss_params"),
        ({"loss": "cross_entropy", "loss_params": {"gamma": 2}}, ValueError, "do not fit loss"),
        ({"adafocal_update_every": 10}, ValueError, "adafocal_update_every applies to the losses that learn"),
        ({"resume": True}, ValueError, "resume=True needs an out_dir"),
        ({"device": "cuda"}, ValueError, "CUDA is not available"),
        ({"device": "gpu0"}, ValueError, "is not a torch device"),
        ({"augment": "yes"}, TypeError, "augment must be True, False or None"),
        ({"ts_criterion": "brier"}, ValueError, "ts_criterion must be one of"),
        ({"reduction": "none"}, ValueError, "reduction must be one of"),
        ({"ood": ["svhn"]}, ValueError, "ood must be one of"),
        ({"ood": "mnist"}, TypeError, "ood must be a list"),
        ({"ood": ["mnist", "mnist"]}, ValueError, "ood names a shift twice"),
        ({"ood": ["gaussian_noise"], "dataset": "mnist1d", "model": "mlp"}, ValueError, "1-D signals"),
        ({"ood": ["mnist"], "dataset": "cifar10", "model": "resnet50"}, ValueError, "fits dataset 'fashion-mnist'"),
        ({"precision": "fp16"}, ValueError, "precision must be one of"),
        ({"log_every": 0}, ValueError, "log_every must be >= 1"),
        ({"verify_data": "no"}, TypeError, "verify_data must be a bool"),
        ({"loss_params": {"validate": False}}, ValueError, "'validate' is not a hyper-parameter"),
        ({"loss": "calfocal", "adafocal_update_every": 0}, ValueError, "adafocal_update_every must be >= 1"),
    ],
)
def test_invalid_configurations_name_the_parameter(params, error, message):
    with pytest.raises(error, match=message):
        TrainConfig(**params)


def test_flat_loss_parameters_and_unknown_names():
    config = TrainConfig.from_params(loss="focal_calibration_loss", gamma=3, lam=0.5, alpha=None)
    assert config.loss_params == {"gamma": 3, "lam": 0.5}
    with pytest.raises(ValueError, match=r"unknown training parameter\(s\) \['epoch'\]"):
        TrainConfig.from_params(epoch=3)


def test_recipes_follow_the_papers():
    paper = RECIPES["mukhoti2020"]
    assert (paper.epochs, paper.batch_size, paper.lr, paper.momentum, paper.weight_decay) == (350, 128, 0.1, 0.9, 5e-4)
    assert paper.milestones == (150, 250) and paper.reduction == "sum" and paper.grad_clip == 2.0
    assert RECIPES["mukhoti2020_tiny_imagenet"].milestones == (40, 60)
    for name, batch, select in (("mukhoti2020_tiny_imagenet", 128, "last"),
                                ("ghosh2022_tiny_imagenet", 64, "best_val_error"),
                                ("komisarenko2024_tiny_imagenet", 64, "last")):
        tiny = RECIPES[name]
        assert (tiny.epochs, tiny.milestones, tiny.batch_size, tiny.select) == (100, (40, 60), batch, select)
        assert (tiny.lr, tiny.momentum, tiny.weight_decay, tiny.reduction) == (0.1, 0.9, 5e-4, "sum")
    assert RECIPES["ghosh2022_tiny_imagenet"].with_epochs(10).select == "best_val_error"
    # AdaFocal App. D.2: ImageNet, SGD momentum 0.9, wd 1e-4, batch 128, lr 0.01 / 0.001 / 0.0001
    # for 30 epochs each, the last model (D.3); PyTorch's defaults otherwise (mean loss, no clipping)
    imagenet = RECIPES["ghosh2022_imagenet"]
    assert (imagenet.epochs, imagenet.batch_size, imagenet.lr, imagenet.momentum, imagenet.weight_decay) == (
        90, 128, 0.01, 0.9, 1e-4)
    assert (imagenet.milestones, imagenet.lr_decay, imagenet.reduction, imagenet.grad_clip, imagenet.select) == (
        (30, 60), 0.1, "mean", None, "last")
    with pytest.raises(ValueError, match="select must be one of"):
        Recipe(epochs=1, select="best")
    assert paper.with_epochs(35).milestones == (15, 25)
    assert RECIPES["cpu"].with_epochs(2).milestones == (1,)
    config = TrainConfig(epochs=12, lr=0.05, batch_size=64, reduction="mean")
    assert config.resolved_recipe.reduction == "mean"
    assert config.resolved_recipe.milestones == (6, 10)
    assert (config.resolved_recipe.lr, config.resolved_recipe.batch_size) == (0.05, 64)


# -- real runs ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_writes_artifacts_that_reproduce_its_metrics(tmp_path):
    result = train({**TINY, "loss": "focal_loss", "gamma": 3, "out_dir": str(tmp_path)})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["history.csv", "logits_test.npz", "logits_val.npz", "metrics.json"]
    assert len(result["history"]) == 2
    stored = json.loads((tmp_path / "metrics.json").read_text())
    val_logits, val_labels = load_logits(tmp_path / "logits_val.npz")
    test_logits, test_labels = load_logits(tmp_path / "logits_test.npz")
    assert val_logits.shape == (400, 10) and test_logits.shape == (10_000, 10)
    recomputed = evaluate_logits(val_logits, val_labels, test_logits, test_labels)
    assert json.loads(json.dumps(recomputed)) == {k: v for k, v in stored.items() if k not in ("gammas", *SEAL_KEYS)}
    assert sorted(stored["files"]) == ["history.csv", "logits_test.npz", "logits_val.npz"]  # sealed
    assert 0.0 < stored["test"]["pre"]["error"] < 0.5  # it learned something
    assert stored["temperature"] in np.round(np.arange(1, 101) * 0.1, 1)


@pytest.mark.slow
def test_resume_after_a_kill_ends_with_identical_metrics(tmp_path, monkeypatch):
    config = {**TINY, "epochs": 3, "loss": "adafocal"}
    uninterrupted = train({**config, "out_dir": str(tmp_path / "a")})

    real_save = train_loop.save_checkpoint

    def save_then_die(out_dir, state):
        real_save(out_dir, state)
        if state["epoch"] == 0:
            raise KeyboardInterrupt("killed after the first epoch")

    monkeypatch.setattr(train_loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train({**config, "out_dir": str(tmp_path / "b")})
    assert not (tmp_path / "b" / "metrics.json").exists()
    monkeypatch.setattr(train_loop, "save_checkpoint", real_save)
    resumed = train({**config, "out_dir": str(tmp_path / "b"), "resume": True})

    a = json.loads((tmp_path / "a" / "metrics.json").read_text())
    b = json.loads((tmp_path / "b" / "metrics.json").read_text())
    unsealed = lambda m: {k: v for k, v in m.items() if k not in SEAL_KEYS}  # noqa: E731 (history.csv holds timings)
    assert unsealed(a) == unsealed(b)
    assert len(a["gammas"]) == 3 and len(a["gammas"][0]) == 15  # γ per bin, per epoch
    np.testing.assert_array_equal(uninterrupted["history"]["train_loss"], resumed["history"]["train_loss"])


@pytest.mark.slow
def test_a_nan_loss_stops_the_run_with_a_clear_error(monkeypatch):
    import torch

    class NaNLoss(torch.nn.Module):
        def forward(self, logits, targets):
            return logits.sum() * float("nan")

    monkeypatch.setattr(train_loop, "get_loss", lambda *args, **kwargs: NaNLoss())
    with pytest.raises(FloatingPointError, match=r"became nan in epoch 1 \(loss="):  # read once per epoch
        train(TINY)
    with pytest.raises(FloatingPointError, match="in epoch 1, step 2"):  # read every log_every steps
        train({**TINY, "log_every": 2})


@pytest.mark.slow
def test_a_run_with_shifts_and_adafocal_stores_what_reproduces_its_metrics(tmp_path):
    train({**TINY, "loss": "adafocal", "ood": ["mnist", "gaussian_noise"], "out_dir": str(tmp_path)})
    stored = json.loads((tmp_path / "metrics.json").read_text())
    logits = {p: load_logits(tmp_path / f"logits_{p}.npz") for p in ("val", "test", "ood_mnist", "ood_gaussian_noise")}
    assert logits["ood_mnist"][0].shape == (5000, 10) and logits["ood_gaussian_noise"][0].shape == (10_000, 10)
    assert (logits["ood_gaussian_noise"][1] == logits["test"][1]).all()  # the noisy test set keeps its labels
    recomputed = evaluate_logits(
        *logits["val"], *logits["test"],
        ood_logits={"mnist": logits["ood_mnist"][0], "gaussian_noise": logits["ood_gaussian_noise"][0]},
    )
    assert json.loads(json.dumps(recomputed)) == {
        k: v for k, v in stored.items() if k not in ("gammas", "adafocal_updates", *SEAL_KEYS)}
    assert stored["ood"]["mnist"]["pre"] > 0.5  # digits look less familiar than clothes
    updates = stored["adafocal_updates"]
    assert len(updates) == 2 and [u["gammas"] for u in updates] == stored["gammas"]
    assert all(len(u["edges"]) == len(u["gaps"]) + 1 == 16 for u in updates)


@pytest.mark.slow
def test_a_best_validation_recipe_evaluates_its_best_epoch_and_resumes_to_it(tmp_path, monkeypatch):
    """AdaFocal's Tiny-ImageNet recipe reports the model with the lowest validation error (App.
    D.3): the evaluated weights are that epoch's (its stored validation logits give the history's
    error of that epoch), ``metrics.json`` names it, and a run killed after it resumes to the
    same metrics (the checkpoint carries the best weights)."""
    config = {**TINY, "recipe": "ghosh2022_tiny_imagenet", "epochs": 4, "lr": 1.0}  # too high: it gets worse
    uninterrupted = train({**config, "out_dir": str(tmp_path / "a")})
    errors = uninterrupted["history"]["val_error"].tolist()
    best = int(np.argmin(errors))  # the first epoch reaching the lowest error
    assert best < 3 and errors[3] != errors[best]  # so the evaluated model is not the last one
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["selected_epoch"] == best + 1
    val_logits, val_labels = load_logits(tmp_path / "a" / "logits_val.npz")
    assert np.isclose((val_logits.argmax(1) != val_labels).mean(), errors[best], atol=1 / 400)

    real_save = train_loop.save_checkpoint

    def save_then_die(out_dir, state):
        real_save(out_dir, state)
        if state["epoch"] == 2:
            raise KeyboardInterrupt("killed after the third epoch")

    monkeypatch.setattr(train_loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train({**config, "out_dir": str(tmp_path / "b")})
    monkeypatch.setattr(train_loop, "save_checkpoint", real_save)
    train({**config, "out_dir": str(tmp_path / "b"), "resume": True})
    resumed = json.loads((tmp_path / "b" / "metrics.json").read_text())
    unsealed = lambda m: {k: v for k, v in m.items() if k not in SEAL_KEYS}  # noqa: E731
    assert unsealed(resumed) == unsealed(metrics)
