"""The training loop: data resident on the device, batched augmentation, per-epoch validation,
AdaFocal's γ updates, atomic checkpoints, and the run's artifacts at the end.

Written for both the book's CPU runs and the papers' GPU runs: on CUDA it keeps the data on the
GPU, uses bf16 autocast and channels_last by default, can ``torch.compile`` the model, and
reads nothing back from the GPU inside an epoch except every ``_SYNC_EVERY`` steps, where it
checks that the loss is finite (a NaN loss stops the run with an error naming the epoch and
step).
"""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.special import softmax
from torch import nn

from ..data import augment as augment_batch
from ..data import load_dataset, load_shift, normalize, train_val_split
from ..losses import AdaFocalLoss, get_loss
from ..metrics import ece, nll
from ..models import get_model
from ..atomic import save_logits, write_json, write_text
from .checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from .config import TrainConfig
from .evaluate import evaluate_logits, fit_calibrators

_SYNC_EVERY = 50  # steps between finiteness checks of the loss (each costs one host sync)


class _Data:
    """The split data set on the training device (images stay uint8 until a batch is drawn)."""

    def __init__(self, config: TrainConfig, device: torch.device):
        ds = load_dataset(config.dataset, root=config.data_root)
        train_idx, val_idx = train_val_split(len(ds.y_train), config.val_size, config.split_seed)
        if config.train_size is not None:
            train_idx = train_idx[: config.train_size]
        as_index = lambda idx: torch.as_tensor(idx, dtype=torch.long)  # noqa: E731
        self.x_train = ds.x_train[as_index(train_idx)].to(device)
        self.y_train = ds.y_train[as_index(train_idx)].to(device)
        self.x_val = ds.x_train[as_index(val_idx)].to(device)
        self.y_val = ds.y_train[as_index(val_idx)].to(device)
        self.x_test, self.y_test = ds.x_test.to(device), ds.y_test.to(device)
        self.mean, self.std = ds.mean, ds.std
        self.num_classes = ds.num_classes
        is_colour_32 = self.x_train.ndim == 4 and tuple(self.x_train.shape[1:]) == (3, 32, 32)
        self.augment = is_colour_32 if config.augment is None else config.augment
        if self.augment and self.x_train.ndim != 4:
            raise ValueError(f"augment=True needs images; {config.dataset} holds 1-D signals")

    def batch(self, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        x = self.x_train[idx]
        if self.augment:
            return augment_batch(x, self.mean, self.std, generator=generator)
        return normalize(x, self.mean, self.std)


def _build_model(config: TrainConfig, data: _Data) -> nn.Module:
    shape = tuple(data.x_train.shape[1:])
    return get_model(config.model, data.num_classes, input_shape=shape, **config.model_params)


@torch.no_grad()
def predict_logits(model: nn.Module, x: torch.Tensor, data: _Data, autocast, batch_size=1000) -> np.ndarray:
    """Float32 logits of ``model`` on ``x`` (evaluation mode, no augmentation)."""
    model.eval()
    out = []
    for start in range(0, len(x), batch_size):
        with autocast():
            out.append(model(normalize(x[start : start + batch_size], data.mean, data.std)).float())
    return torch.cat(out).cpu().numpy()


def train_step(model, loss_fn, optimizer, x, y, autocast=nullcontext, channels_last=False, grad_clip=None):
    """One optimisation step on a prepared batch; returns the detached loss and logits.

    The forward pass runs under ``autocast`` (bf16 on GPUs), the loss in float32; gradients are
    clipped to norm ``grad_clip`` (the papers use 2) before the step. Nothing is read back to
    the host, so steps queue up on a GPU without synchronising.
    """
    if channels_last and x.ndim == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    with autocast():
        logits = model(x)
    loss = loss_fn(logits.float(), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip is not None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, grad_clip)
    optimizer.step()
    return loss.detach(), logits.detach()


def train(config: TrainConfig | dict) -> dict:
    """Train one run and write its artifacts into ``config.out_dir`` (if set).

    Returns the run's metrics (the content of ``metrics.json``, see :func:`evaluate_logits`)
    plus ``"history"`` (a DataFrame, one row per epoch), ``"logits"`` (``{"val": (logits,
    labels), "test": (logits, labels)}``, the float16-rounded logits the metrics come from) and
    ``"calibrators"`` (the fitted ``{"ts": ..., "fts": ...}``) and ``"out_dir"``. With
    ``resume=True`` and a checkpoint in ``out_dir``, training continues after the last saved
    epoch; on the CPU with a fixed seed it ends with the same metrics as an uninterrupted run.
    """
    config = config if isinstance(config, TrainConfig) else TrainConfig.from_params(**config)
    recipe = config.resolved_recipe
    device = torch.device(config.device)
    on_cuda = device.type == "cuda"
    use_bf16 = on_cuda if config.bf16 is None else config.bf16
    channels_last = on_cuda if config.channels_last is None else config.channels_last
    out_dir = Path(config.out_dir) if config.out_dir is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(config.seed)
    data = _Data(config, device)
    model = _build_model(config, data).to(device)
    if channels_last and data.x_train.ndim == 4:
        model = model.to(memory_format=torch.channels_last)
    loss_fn = get_loss(config.loss, reduction=recipe.reduction, **config.loss_params).to(device)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=recipe.lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, list(recipe.milestones), recipe.lr_decay)
    generator = torch.Generator(device=device).manual_seed(config.seed)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if use_bf16 else nullcontext
    step_model = torch.compile(model) if config.compile else model

    history: list[dict] = []
    start_epoch = 0
    state = load_checkpoint(out_dir, device) if (config.resume and out_dir) else None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        loss_fn.load_state_dict(state["loss"])
        if isinstance(loss_fn, AdaFocalLoss):
            # the checkpoint stores the per-update arrays as tensors (calibnb.train.checkpoint.plain)
            loss_fn.history[:] = [{k: v.cpu().numpy() for k, v in update.items()}
                                  for update in state["loss_history"]]
        generator.set_state(state["generator"].cpu() if not on_cuda else state["generator"])
        torch.set_rng_state(state["torch_rng"].cpu())
        history, start_epoch = state["history"], state["epoch"] + 1

    n_train = len(data.y_train)
    epochs = range(start_epoch, recipe.epochs)
    if config.progress:
        from .._validation import progress_bar

        tqdm = progress_bar()

        epochs = tqdm(epochs, initial=start_epoch, total=recipe.epochs, desc="epochs", mininterval=10)
    for epoch in epochs:
        started = time.perf_counter()
        model.train()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        order = torch.randperm(n_train, generator=generator, device=device)
        for step, idx in enumerate(order.split(recipe.batch_size)):
            y = data.y_train[idx]
            loss, logits = train_step(
                step_model, loss_fn, optimizer, data.batch(idx, generator), y,
                autocast, channels_last, recipe.grad_clip,
            )
            batch_loss = loss * (len(idx) if recipe.reduction == "mean" else 1)
            loss_sum += batch_loss
            correct += (logits.argmax(1) == y).sum()
            if step % _SYNC_EVERY == 0 and not torch.isfinite(batch_loss).item():
                raise FloatingPointError(
                    f"the training loss became {batch_loss.item()} at epoch {epoch + 1}, step {step + 1} "
                    f"(loss={config.loss!r}, params={config.loss_params}, lr={optimizer.param_groups[0]['lr']})"
                )
            if config.adafocal_update_every and (step + 1) % config.adafocal_update_every == 0:
                _adafocal_update(loss_fn, model, data, autocast)
                model.train()
        lr = optimizer.param_groups[0]["lr"]
        scheduler.step()
        train_loss = loss_sum.item() / n_train
        if not math.isfinite(train_loss):
            raise FloatingPointError(f"the training loss became {train_loss} in epoch {epoch + 1}")

        val_logits = predict_logits(model, data.x_val, data, autocast)
        val_probs = softmax(val_logits.astype(np.float64), axis=1)
        y_val = data.y_val.cpu().numpy()
        row = {
            "epoch": epoch + 1,
            "lr": lr,
            "train_loss": train_loss,
            "train_error": 1.0 - correct.item() / n_train,
            "val_nll": nll(val_probs, y_val),
            "val_ece": ece(val_probs, y_val, n_bins=config.n_bins),
            "val_error": float((val_probs.argmax(1) != y_val).mean()),
            "seconds": time.perf_counter() - started,
        }
        if isinstance(loss_fn, AdaFocalLoss):
            if not config.adafocal_update_every:
                loss_fn.update(val_probs, y_val)
            row["gammas"] = loss_fn.gammas.detach().cpu().tolist()
        history.append(row)
        if out_dir is not None:
            save_checkpoint(out_dir, {
                "epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "loss": loss_fn.state_dict(),
                "loss_history": list(getattr(loss_fn, "history", [])),
                "generator": generator.get_state(), "torch_rng": torch.get_rng_state(),
                "history": history,
            })

    return _finish(config, model, data, autocast, loss_fn, history, out_dir)


def _adafocal_update(loss_fn, model, data: _Data, autocast) -> None:
    val_logits = predict_logits(model, data.x_val, data, autocast)
    loss_fn.update(softmax(val_logits.astype(np.float64), axis=1), data.y_val.cpu().numpy())


def _finish(config, model, data, autocast, loss_fn, history, out_dir) -> dict:
    """Evaluate on the stored (float16) logits and write the run's artifacts, metrics last."""
    half = lambda z: z.astype(np.float16).astype(np.float64)  # noqa: E731
    val_logits = half(predict_logits(model, data.x_val, data, autocast))
    test_logits = half(predict_logits(model, data.x_test, data, autocast))
    y_val, y_test = data.y_val.cpu().numpy(), data.y_test.cpu().numpy()
    shifted = {}
    for name in config.ood:
        x_ood, y_ood = load_shift(name, data.x_test, data.y_test)  # the same shifted set for every run
        shifted[name] = (half(predict_logits(model, x_ood.to(data.x_test.device), data, autocast)),
                         y_ood.cpu().numpy())
    ts, fts = fit_calibrators(val_logits, y_val, config.n_bins, config.ts_criterion, config.fts_criterion)
    metrics = evaluate_logits(
        val_logits, y_val, test_logits, y_test, n_bins=config.n_bins, calibrators=(ts, fts),
        ood_logits={name: z for name, (z, _) in shifted.items()},
    )
    metrics["gammas"] = [row["gammas"] for row in history if "gammas" in row]
    if isinstance(loss_fn, AdaFocalLoss):  # each update's bin edges, calibration gaps and γ (Fig. 5)
        finite_or_none = lambda a: [v if math.isfinite(v) else None for v in a]  # noqa: E731  (empty bins)
        metrics["adafocal_updates"] = [
            {key: finite_or_none(np.asarray(value, dtype=np.float64).ravel().tolist()) for key, value in update.items()}
            for update in loss_fn.history
        ]
    table = pd.DataFrame(history)
    if out_dir is not None:
        save_logits(out_dir / "logits_val.npz", val_logits, y_val)
        save_logits(out_dir / "logits_test.npz", test_logits, y_test)
        for name, (z, y) in shifted.items():
            save_logits(out_dir / f"logits_ood_{name}.npz", z, y)
        write_text(out_dir / "history.csv", table.to_csv(index=False))
        write_json(out_dir / "metrics.json", metrics)
        (out_dir / CHECKPOINT).unlink(missing_ok=True)
    return {
        **metrics,
        "history": table,
        "logits": {"val": (val_logits, y_val), "test": (test_logits, y_test),
                   **{f"ood_{name}": pair for name, pair in shifted.items()}},
        "calibrators": {"ts": ts, "fts": fts},
        "out_dir": str(out_dir) if out_dir else None,
    }
