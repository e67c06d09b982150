"""The training loop: data resident on the device, batched augmentation, per-epoch validation,
AdaFocal's γ updates, atomic checkpoints, and the run's artifacts at the end.

Written for both the book's CPU runs and the papers' GPU runs, with the same code: the data set
lives on the training device and is augmented there a batch at a time; on CUDA the forward pass
runs under bf16 autocast with channels_last weights by default, and the model can be
``torch.compile``d. **A training step reads nothing back from the device** (no ``.item()``, no
value-dependent branch, no data-dependent shapes): the data set is checked once when loaded,
the loss is built with ``validate=False``, the running loss and accuracy are summed on the
device and read once per epoch (or every ``log_every`` steps), and AdaFocal's in-epoch γ
updates bin the validation set on the device (:class:`calibnb.losses.adafocal.ValidationBinnedLoss`).
So a GPU never waits for the host inside an epoch, and ``tests/test_train_host_reads.py``
counts zero reads in :meth:`Trainer.step`.

A data set too large for memory (ImageNet, a :class:`calibnb.data.StreamedDataset`) runs in the
streaming mode instead (``calibnb.train.streaming``): its batches come from ``DataLoader``
worker processes through pinned memory with non-blocking copies, its validation and test logits
stream the same way, and a step still reads nothing back (``tests/test_train_streaming.py``).
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

import calibnb

from .._validation import check_type
from ..atomic import fits_float16, save_logits, seal, write_json, write_text
from ..data import augment as augment_batch
from ..data import StreamedDataset, find_glove, load_dataset, load_shift, normalize, train_val_split
from ..data.glove import embedding_matrix
from ..losses import get_loss
from ..metrics import ece, nll
from ..models import TEXT_MODELS, get_model
from .checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from .config import TrainConfig
from .evaluate import evaluate_logits, fit_calibrators
from .streaming import StreamedData


def load_data(config: TrainConfig, device: torch.device):
    """The run's data set, split: on the device (:class:`DeviceData`), or streamed from disk
    (:class:`calibnb.train.streaming.StreamedData`) when ``load_dataset`` returns a
    :class:`calibnb.data.StreamedDataset` (ImageNet)."""
    ds = load_dataset(config.dataset, root=config.data_root, verify=config.verify_data)
    if isinstance(ds, StreamedDataset):
        return StreamedData(config, ds, device)
    return DeviceData(config, ds, device)


class DeviceData:
    """The split data set on the training device (images stay uint8 until a batch is drawn).

    Its labels are checked once here (``load_dataset`` refuses labels outside ``[0, K)``), which
    is what lets the training loss skip its per-call checks.
    """

    def __init__(self, config: TrainConfig, ds, device: torch.device):
        x_train, x_test = ds.x_train, ds.x_test
        if config.model == "bert" and ds.vocabulary is not None:
            x_train, x_test = bert_inputs(ds, config.model_params)
        train_idx, val_idx = split_of(ds, config.val_size, config.split_seed)
        if config.train_size is not None:
            train_idx = train_idx[: config.train_size]
        as_index = lambda idx: torch.as_tensor(idx, dtype=torch.long)  # noqa: E731
        self.x_train = x_train[as_index(train_idx)].to(device)
        self.y_train = ds.y_train[as_index(train_idx)].to(device)
        self.x_val = x_train[as_index(val_idx)].to(device)
        self.y_val = ds.y_train[as_index(val_idx)].to(device)
        self.x_test, self.y_test = x_test.to(device), ds.y_test.to(device)
        self.mean, self.std = ds.mean, ds.std
        self.num_classes = ds.num_classes
        self.vocabulary = ds.vocabulary
        is_text, text_model = ds.vocabulary is not None, config.model in TEXT_MODELS
        if is_text != text_model:
            raise ValueError(f"model: {config.model!r} takes {'token ids' if text_model else 'images or signals'}, "
                             f"but {config.dataset} holds {'token ids' if is_text else 'images or signals'}")
        is_colour = self.x_train.ndim == 4 and self.x_train.shape[1] == 3
        self.augment = is_colour if config.augment is None else config.augment
        if self.augment and self.x_train.ndim != 4:
            raise ValueError(f"augment=True needs images; {config.dataset} holds 1-D signals")
        self.input_shape = tuple(self.x_train.shape[1:])

    def batch(self, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        x = self.x_train[idx]
        if self.augment:
            return augment_batch(x, self.mean, self.std, generator=generator)
        return model_inputs(x, self.mean, self.std)

    def batches(self, epoch: int, batch_size: int, generator: torch.Generator):
        """One epoch's training batches ``(x, y)``: a permutation drawn from ``generator`` on the
        device, each batch augmented there."""
        order = torch.randperm(len(self.y_train), generator=generator, device=generator.device)
        for idx in order.split(batch_size):
            yield self.batch(idx, generator), self.y_train[idx]

    def logits(self, model: nn.Module, split: str, autocast) -> torch.Tensor:
        """Float32 logits of ``model`` on the ``"val"`` or ``"test"`` set, on the device."""
        x = {"val": self.x_val, "test": self.x_test}[split]
        return predict_on_device(model, x, self.mean, self.std, autocast)


def bert_inputs(ds, model_params: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """A text data set's documents as BERT's WordPiece ids: training (and validation) documents
    cut to 128 tokens, test documents to 512 (AdaFocal App. D), padded with 0 after."""
    from ..models.bert import TEST_LENGTH, TRAIN_LENGTH, bert_tokenizer, encode_for_bert

    tokenizer = bert_tokenizer(**{k: model_params[k] for k in ("pretrained", "vocab_file") if k in model_params})
    train_texts, test_texts = ds.info["texts"]
    return (torch.from_numpy(encode_for_bert(tokenizer, train_texts, TRAIN_LENGTH)),
            torch.from_numpy(encode_for_bert(tokenizer, test_texts, TEST_LENGTH)))


def model_inputs(x: torch.Tensor, mean, std) -> torch.Tensor:
    """What the network takes from stored inputs ``x``: token ids (int64) as they are, images and
    signals normalised by ``mean`` and ``std``."""
    return x if x.dtype == torch.int64 else normalize(x, mean, std)


def split_of(ds, val_size: int, split_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train_idx, val_idx)`` of the data set ``ds``: its fixed validation set where it has one
    (Tiny-ImageNet's 50 images a class, :attr:`calibnb.data.Dataset.val_idx`), which ``val_size``
    must match, else the papers' shuffled split (:func:`calibnb.data.train_val_split`). The
    training indices of a fixed split are shuffled with ``split_seed`` as the drawn split's are,
    so that ``train_size`` keeps a random subset rather than the first classes."""
    if ds.val_idx is None:
        return train_val_split(len(ds.y_train), val_size, split_seed)
    if val_size != len(ds.val_idx):
        raise ValueError(f"val_size: {ds.name}'s validation set is fixed by its files ({len(ds.val_idx)} "
                         f"images here), so val_size must be {len(ds.val_idx)}, not {val_size}")
    is_val = np.zeros(len(ds.y_train), dtype=bool)
    is_val[ds.val_idx] = True
    if is_val.all():
        raise ValueError(f"{ds.name}: every training image belongs to the fixed validation set; none is left to train on")
    train_idx = np.flatnonzero(~is_val).astype(np.int64)
    np.random.RandomState(split_seed).shuffle(train_idx)
    return train_idx, ds.val_idx


@torch.inference_mode()
def predict_on_device(model: nn.Module, x: torch.Tensor, mean, std, autocast=nullcontext,
                      batch_size: int = 1000) -> torch.Tensor:
    """Float32 logits of ``model`` on the images or signals ``x``, normalised by ``mean`` and
    ``std``, in evaluation mode, where ``x`` is (nothing is read back to the host)."""
    model.eval()
    out = []
    for start in range(0, len(x), batch_size):
        with autocast():
            out.append(model(model_inputs(x[start : start + batch_size], mean, std)).float())
    return torch.cat(out)


def predict_logits(model: nn.Module, x: torch.Tensor, mean, std, autocast=nullcontext,
                   batch_size: int = 1000) -> np.ndarray:
    """Float32 logits of ``model`` on ``x`` normalised by ``mean`` and ``std`` (the data set's,
    e.g. ``Trainer(config).data.mean``), in evaluation mode without augmentation, on the host."""
    check_type(model, "model", nn.Module, "a torch.nn.Module")
    check_type(x, "x", torch.Tensor, "a tensor of inputs")
    return predict_on_device(model, x, mean, std, autocast, batch_size).cpu().numpy()


def train_step(model, loss_fn, optimizer, x, y, autocast=nullcontext, channels_last=False, grad_clip=None):
    """One optimisation step on a prepared batch; returns the detached loss and logits.

    The forward pass runs under ``autocast`` (bf16 on GPUs); the loss gets the logits as they
    come (calibnb's losses compute in float32 from half-precision logits); gradients are
    clipped to norm ``grad_clip`` (the papers use 2) before the step. Nothing is read back to
    the host when ``loss_fn`` reads nothing (built with ``validate=False``), so steps queue up
    on a GPU without synchronising.
    """
    if channels_last and x.ndim == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    with autocast():
        logits = model(x)
    loss = loss_fn(logits, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip is not None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, grad_clip)
    optimizer.step()
    return loss.detach(), logits.detach()


class Trainer:
    """One run of a :class:`TrainConfig`: :meth:`Trainer.fit` trains, evaluates and writes the
    artifacts.

    The pieces a user may want alone: :meth:`step` (one batch, nothing read back to the host),
    :meth:`epoch` (one pass, then validation and a checkpoint: one history row) and
    :meth:`finish` (post-hoc calibration, metrics, artifacts). :func:`train` is
    ``Trainer(config).fit()``.
    """

    def __init__(self, config: TrainConfig | dict):
        config = config if isinstance(config, TrainConfig) else TrainConfig.from_params(**config)
        self.config, self.recipe = config, config.resolved_recipe
        self.device = torch.device(config.device)
        self.channels_last = config.on_cuda if config.channels_last is None else config.channels_last
        bf16 = config.uses_bf16
        self.autocast = (lambda: torch.autocast(self.device.type, dtype=torch.bfloat16)) if bf16 else nullcontext
        self.out_dir = Path(config.out_dir) if config.out_dir is not None else None
        torch.manual_seed(config.seed)
        self.data = load_data(config, self.device)
        shape = self.data.input_shape
        model_params = dict(config.model_params)
        if config.model == "global_pooling_cnn" and "embeddings" not in model_params:
            # the papers' frozen GloVe vectors for the data set's words (calibnb.data.glove)
            glove = find_glove(config.data_root)
            model_params["embeddings"] = torch.from_numpy(
                embedding_matrix(self.data.vocabulary, glove, verify=config.verify_data))
        self.model = get_model(config.model, self.data.num_classes, input_shape=shape,
                               **model_params).to(self.device)
        if self.channels_last and len(shape) == 3:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.loss_fn = get_loss(config.loss, reduction=self.recipe.reduction, validate=False,
                                **config.loss_params).to(self.device)
        trained = [p for p in self.model.parameters() if p.requires_grad]  # a frozen embedding is not
        if self.recipe.optimizer == "adamw":
            self.optimizer = torch.optim.AdamW(trained, lr=self.recipe.lr, weight_decay=self.recipe.weight_decay)
        elif self.recipe.optimizer == "adam":
            # fused: the step count stays a device tensor, so a step reads nothing back (the
            # default implementation reads each parameter's count with .item())
            self.optimizer = torch.optim.Adam(trained, lr=self.recipe.lr, weight_decay=self.recipe.weight_decay,
                                              fused=True)
        else:
            self.optimizer = torch.optim.SGD(trained, lr=self.recipe.lr, momentum=self.recipe.momentum,
                                             weight_decay=self.recipe.weight_decay)
        # AdamW (BERT): warm-up then linear decay, stepped after every batch; else per epoch
        self.per_batch_schedule = self.recipe.warmup is not None
        if self.per_batch_schedule:
            self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, LinearWarmupDecay(
                math.ceil(len(self.data.y_train) / self.recipe.batch_size), self.recipe.warmup, self.recipe.epochs))
        else:
            self.scheduler = torch.optim.lr_scheduler.MultiStepLR(
                self.optimizer, list(self.recipe.milestones), self.recipe.lr_decay)
        self.generator = torch.Generator(device=self.device).manual_seed(config.seed)
        self.step_model = torch.compile(self.model) if config.compile else self.model
        self.history: list[dict] = []
        self.start_epoch = 0
        # recipe.select == "best_val_error": the best epoch so far (from 0) and its weights' copy
        self.best: dict | None = None
        # the epoch's running sums, on the device: summed loss, correct predictions
        self.running = torch.zeros(2, device=self.device, dtype=torch.float64)

    def step(self, idx: torch.Tensor) -> None:
        """One optimisation step on the training examples ``idx`` (a tensor on the device) of a
        device-resident data set: augment, then :meth:`step_batch`."""
        if not isinstance(self.data, DeviceData):
            raise TypeError(f"step(idx) indexes a data set held on the device; {self.config.dataset} is streamed "
                            "from disk: train on its batches with step_batch(x, y) (data.batches(epoch, batch_size))")
        self.step_batch(self.data.batch(idx, self.generator), self.data.y_train[idx])

    def step_batch(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """One optimisation step on a prepared batch on the device (the streaming mode's, or an
        augmented one): forward, loss, backward, clip, update, and add to the running sums."""
        loss, logits = train_step(self.step_model, self.loss_fn, self.optimizer, x, y, self.autocast,
                                  self.channels_last, self.recipe.grad_clip)
        if self.per_batch_schedule:
            self.scheduler.step()
        summed = loss * len(y) if self.recipe.reduction == "mean" else loss
        self.running += torch.stack([summed.double(), (logits.argmax(1) == y).sum().double()])

    def observe_validation_on_device(self) -> None:
        """Show the loss the validation set within an epoch (AdaFocal's γ update, CalFocal's bins:
        ``adafocal_update_every``), computed on the device: nothing is read back to the host."""
        logits = self.data.logits(self.model, "val", self.autocast)
        self.loss_fn.observe_validation(torch.softmax(logits.double(), dim=1), self.data.y_val)
        self.model.train()

    def predict(self, x: torch.Tensor) -> np.ndarray:
        """Float32 logits of the model on inputs ``x`` of the run's data set, on the host."""
        return predict_logits(self.model, x, self.data.mean, self.data.std, self.autocast)

    def split_logits(self, split: str) -> np.ndarray:
        """Float32 logits of the model on the run's ``"val"`` or ``"test"`` set, on the host
        (streamed from disk in the streaming mode)."""
        return self.data.logits(self.model, split, self.autocast).cpu().numpy()

    def epoch(self, epoch: int) -> dict:
        """Epoch ``epoch`` (from 0): the steps, then validation; returns its history row."""
        config, recipe, n_train = self.config, self.recipe, len(self.data.y_train)
        started = time.perf_counter()
        self.model.train()
        self.running.zero_()
        for step, (x, y) in enumerate(self.data.batches(epoch, recipe.batch_size, self.generator)):
            self.step_batch(x, y)
            if config.log_every and (step + 1) % config.log_every == 0:
                self._check_finite(self.running[0].item(), epoch, step)
            if config.adafocal_update_every and (step + 1) % config.adafocal_update_every == 0:
                self.observe_validation_on_device()
        lr = self.optimizer.param_groups[0]["lr"]
        if not self.per_batch_schedule:
            self.scheduler.step()
        loss_sum, correct = self.running.tolist()  # the epoch's one read of the running sums
        self._check_finite(loss_sum, epoch)

        val_logits = self.split_logits("val")
        self._check_outputs(val_logits, epoch)
        val_probs = softmax_rows(val_logits)
        y_val = self.data.y_val.cpu().numpy()
        row = {
            "epoch": epoch + 1,
            "lr": lr,
            "train_loss": loss_sum / n_train,
            "train_error": 1.0 - correct / n_train,
            "val_nll": nll(val_probs, y_val),
            "val_ece": ece(val_probs, y_val, n_bins=config.n_bins),
            "val_error": float((val_probs.argmax(1) != y_val).mean()),
            "seconds": time.perf_counter() - started,
        }
        if not config.adafocal_update_every:
            self.loss_fn.observe_validation(val_probs, y_val)
        gammas = self.loss_fn.adapted_gammas()
        if gammas is not None:
            row["gammas"] = gammas
        return row

    def _check_finite(self, loss_sum: float, epoch: int, step: int | None = None) -> None:
        if not math.isfinite(loss_sum):
            where = f"epoch {epoch + 1}" + (f", step {step + 1}" if step is not None else "")
            raise FloatingPointError(
                f"the training loss became {loss_sum} in {where} (loss={self.config.loss!r}, "
                f"params={self.config.loss_params}, lr={self.optimizer.param_groups[0]['lr']})"
                + ("; log_every=1 names the step" if step is None else ""))

    def _check_outputs(self, val_logits: np.ndarray, epoch: int) -> None:
        """Stop a diverged run at the end of the epoch it diverged in, before its checkpoint is
        written (a resume then starts from the last sound epoch): validation logits that are not
        finite, or beyond what the run's float16 artifacts can hold, mean the weights blew up."""
        if not fits_float16(val_logits):
            largest = float(np.abs(val_logits).max()) if np.isfinite(val_logits).all() else math.inf
            raise FloatingPointError(
                f"the network diverged in epoch {epoch + 1}: its validation logits reach {largest:g} "
                f"(loss={self.config.loss!r}, lr={self.optimizer.param_groups[0]['lr']}); lower the "
                "learning rate")

    def state(self, epoch: int) -> dict:
        """What a checkpoint after epoch ``epoch`` holds."""
        return {
            "epoch": epoch, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "loss": self.loss_fn.state_dict(),
            "generator": self.generator.get_state(), "torch_rng": torch.get_rng_state(),
            "history": self.history, "best": self.best,
            "run": self.config.fingerprint(), "calibnb": calibnb.__version__,
        }

    def restore(self) -> None:
        """Continue after the last checkpoint in ``out_dir`` (``resume=True``), if there is one."""
        state = load_checkpoint(self.out_dir, self.device)
        if state is None:
            return
        check_checkpoint_belongs(state, self.config, self.recipe.epochs, self.out_dir / CHECKPOINT)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.loss_fn.load_state_dict(state["loss"])
        on_cuda = self.device.type == "cuda"
        self.generator.set_state(state["generator"] if on_cuda else state["generator"].cpu())
        torch.set_rng_state(state["torch_rng"].cpu())
        self.history, self.start_epoch = state["history"], state["epoch"] + 1
        self.best = state.get("best")

    def fit(self) -> dict:
        """Train (from the last checkpoint with ``resume=True``), then :meth:`finish`."""
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            if self.config.resume:
                self.restore()
        epochs = range(self.start_epoch, self.recipe.epochs)
        if self.config.progress:
            from .._progress import progress_bar

            epochs = progress_bar()(epochs, initial=self.start_epoch, total=self.recipe.epochs, desc="epochs",
                                    mininterval=10)
        for epoch in epochs:
            self.history.append(self.epoch(epoch))
            self.keep_if_best(epoch)
            if self.out_dir is not None:
                save_checkpoint(self.out_dir, self.state(epoch))
        return self.finish()

    def keep_if_best(self, epoch: int) -> None:
        """With the recipe's ``select="best_val_error"``, keep a copy of the weights of epoch
        ``epoch`` (from 0) when its validation error is below every earlier epoch's (the first
        epoch reaching the lowest error wins)."""
        if self.recipe.select != "best_val_error":
            return
        error = self.history[-1]["val_error"]
        if self.best is None or error < self.best["val_error"]:
            weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best = {"epoch": epoch, "val_error": error, "model": weights}

    def finish(self) -> dict:
        """After training: the validation, test and shifted test sets' logits (rounded to the
        float16 the artifacts keep), the post-hoc calibrators fitted on validation, every metric,
        and, with ``out_dir``, the artifacts (``metrics.json`` last, sealed; the checkpoint then
        goes). Returns what :func:`train` returns. With the recipe's ``select="best_val_error"``
        the evaluated weights are those of the epoch with the lowest validation error, and
        ``metrics.json`` says which (``selected_epoch``, from 1)."""
        config, data = self.config, self.data
        if self.best is not None:
            self.model.load_state_dict(self.best["model"])
        val_logits = stored(self.split_logits("val"), "validation")
        test_logits = stored(self.split_logits("test"))
        y_val, y_test = data.y_val.cpu().numpy(), data.y_test.cpu().numpy()
        shifted = {}
        for name in config.ood:
            x_ood, y_ood = load_shift(name, data.x_test, data.y_test)  # the same shifted set for every run
            shifted[name] = stored(self.predict(x_ood.to(data.x_test.device)), name), y_ood.cpu().numpy()
        ts, fts = fit_calibrators(val_logits, y_val, config.n_bins, config.ts_criterion, config.fts_criterion)
        metrics = evaluate_logits(
            val_logits, y_val, test_logits, y_test, n_bins=config.n_bins, calibrators=(ts, fts),
            ood_logits={name: z for name, (z, _) in shifted.items()},
        )
        metrics["gammas"] = [row["gammas"] for row in self.history if "gammas" in row]
        if self.best is not None:
            metrics["selected_epoch"] = self.best["epoch"] + 1
        metrics.update(self.loss_fn.run_record())
        table = pd.DataFrame(self.history)
        logits = {"val": (val_logits, y_val), "test": (test_logits, y_test),
                  **{f"ood_{name}": pair for name, pair in shifted.items()}}
        if self.out_dir is not None:
            write_artifacts(self.out_dir, logits, table, metrics)
        return {**metrics, "history": table, "logits": logits, "calibrators": {"ts": ts, "fts": fts},
                "out_dir": str(self.out_dir) if self.out_dir else None}


class LinearWarmupDecay:
    """The learning rate's factor at step ``s``: ``s / w`` for the ``w`` = ``warmup`` × an
    epoch's batches of warm-up, then linear to 0 at the last step (Hugging Face's
    ``get_linear_schedule_with_warmup``)."""

    def __init__(self, steps_per_epoch: int, warmup: float, epochs: int):
        self.warm = max(1, round(warmup * steps_per_epoch))
        self.total = max(self.warm + 1, steps_per_epoch * epochs)

    def __call__(self, step: int) -> float:
        if step < self.warm:
            return step / self.warm
        return max(0.0, (self.total - step) / (self.total - self.warm))


def check_checkpoint_belongs(state: dict, config: TrainConfig, epochs: int, path) -> None:
    """Refuse (``ValueError`` naming ``path``) a checkpoint of another run: one without this run's
    :meth:`TrainConfig.fingerprint` or written by another calibnb version (the exact resume is
    promised within one version), or one whose epoch and history do not fit this run's ``epochs``."""
    where = f"cannot resume from {path}:"
    if state.get("run") != config.fingerprint():
        raise ValueError(f"{where} it belongs to another run (its parameters' fingerprint differs, or it has "
                         "none); delete it to start this run afresh, or run with resume=False")
    if state.get("calibnb") != calibnb.__version__:
        raise ValueError(f"{where} it was written by calibnb {state.get('calibnb')}, this is "
                         f"{calibnb.__version__}; delete it to start afresh")
    epoch, history = state.get("epoch"), state.get("history")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 0 <= epoch < epochs:
        raise ValueError(f"{where} it is after epoch {epoch!r}, but this run trains {epochs} epochs")
    if not isinstance(history, list) or len(history) != epoch + 1:
        raise ValueError(f"{where} its history has {len(history) if isinstance(history, list) else history!r} "
                         f"rows for {epoch + 1} epochs")


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Softmax of float32 logits in float64, row by row (what the metrics read)."""
    return softmax(logits.astype(np.float64), axis=1)


def train(config: TrainConfig | dict) -> dict:
    """Train one run and write its artifacts into ``config.out_dir`` (if set).

    Returns the run's metrics (the content of ``metrics.json``, see :func:`evaluate_logits`)
    plus ``"history"`` (a DataFrame, one row per epoch), ``"logits"`` (``{"val": (logits,
    labels), "test": (logits, labels)}``, the float16-rounded logits the metrics come from) and
    ``"calibrators"`` (the fitted ``{"ts": ..., "fts": ...}``) and ``"out_dir"``. With
    ``resume=True`` and a checkpoint in ``out_dir``, training continues after the last saved
    epoch; on the CPU with a fixed seed it ends with the same metrics as an uninterrupted run.
    """
    return Trainer(config).fit()


def stored(logits: np.ndarray, split: str = "test") -> np.ndarray:
    """``logits`` as the run's artifacts keep them: rounded to float16 (in float64), refused when
    not finite or beyond float16's range (the network diverged)."""
    if not fits_float16(logits):
        raise FloatingPointError(f"the network diverged: its {split} logits are not finite or beyond "
                                 "float16's range, which the run's artifacts hold; lower the learning rate")
    return logits.astype(np.float16).astype(np.float64)


def write_artifacts(out_dir: Path, logits: dict, history: pd.DataFrame, metrics: dict) -> None:
    """A finished run's files: ``logits_<split>.npz`` for each ``(logits, labels)`` of ``logits``,
    ``history.csv``, then ``metrics.json`` sealed over them (and ``params.yaml``), which marks the
    run finished; the checkpoint is deleted last."""
    for split, (z, y) in logits.items():
        save_logits(out_dir / f"logits_{split}.npz", z, y)
    write_text(out_dir / "history.csv", history.to_csv(index=False))
    artifacts = [f"logits_{split}.npz" for split in logits] + ["history.csv"]
    artifacts += ["params.yaml"] if (out_dir / "params.yaml").is_file() else []
    write_json(out_dir / "metrics.json", seal(metrics, out_dir, artifacts))  # last: the run is finished
    (out_dir / CHECKPOINT).unlink(missing_ok=True)
