"""Every knob of a training run, validated before anything is loaded.

:class:`TrainConfig` is what ``nbs/train.md``'s parameters cell fills in and what
:func:`calibnb.train.train` takes. Invalid values raise ``ValueError``/``TypeError`` naming the
parameter, so a bad papermill parameter fails in the notebook's first cell, not an hour in.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import asdict, dataclass, field

from .._validation import check_choice, check_int, check_n_bins, check_real, did_you_mean
from .recipes import RECIPES, Recipe

#: ``precision`` values: bf16 autocast of the forward pass, or float32 throughout.
PRECISIONS = ("bf16", "fp32")

#: Parameters that say *how* or *where* a run executes, not *what* it computes: they are no part of
#: a run's identity (its folder name, its checkpoint's fingerprint), so a run finished on a GPU is
#: not redone on a CPU and a run may resume on another device.
EXECUTION_KEYS = frozenset({"out_dir", "device", "progress", "compile", "resume", "log_every", "verify_data",
                            "workers"})

#: Loss parameters that may be given flat (``-p gamma 5``) as well as inside ``loss_params``.
FLAT_LOSS_PARAMS = ("gamma", "lam", "alpha")


@dataclass
class TrainConfig:
    """One training run (defaults: the book's one-minute CPU run on Fashion-MNIST).

    Data: ``dataset`` (a :func:`calibnb.data.load_dataset` name), ``data_root``, ``val_size``
    (held out of the training set with the papers' split rule, seed ``split_seed``),
    ``train_size`` (use only the first ``train_size`` training examples after the split; None
    keeps all), ``augment`` (random crop with padding 4 + horizontal flip; default on for
    colour images, off otherwise). A data set whose files fix the validation set
    (Tiny-ImageNet, 20 Newsgroups) takes it, and ``val_size`` must equal its size. Text data sets
    (``20newsgroups``, ``ag_news``, ``finsen``) hold token ids and train a text model
    (``global_pooling_cnn``, with the GloVe vectors found beside the data, or ``bert``).
    ImageNet streams from disk (``calibnb.train.streaming``): its validation and test sets
    are ``val_size`` and the rest of the published validation images (seed ``split_seed``),
    ``augment`` is its standard random-resized crop and flip, and ``workers`` (execution only;
    default ``min(8, cpu_count)``) is the number of ``DataLoader`` processes decoding its JPEGs.
    Model: ``model`` (a :func:`calibnb.models.get_model` name) and ``model_params``.
    Loss: ``loss`` (a :func:`calibnb.losses.get_loss` name) and ``loss_params``;
    ``adafocal_update_every`` updates AdaFocal's γ (CalFocal's bins) every that many batches
    instead of once per epoch.
    Optimisation: ``recipe`` (:data:`calibnb.train.RECIPES`), optionally overriding its
    ``epochs``, ``batch_size``, ``lr``, ``weight_decay`` and ``reduction`` (the papers' code sums
    every loss over the batch except Brier, which it averages: its sweep files say so).
    Execution: ``seed``, ``device``, ``precision`` (``"bf16"``: the forward pass under bf16
    autocast, the loss in float32; ``"fp32"``; default bf16 on CUDA), ``channels_last`` (default
    on for CUDA), ``compile`` (``torch.compile`` the model), ``log_every`` (read the running loss
    every that many steps, to stop a diverging run early; default once per epoch, the only read
    from the device in an epoch), ``out_dir``, ``resume``, ``progress``, ``verify_data`` (check
    the data files' md5 against the published release; False for a copy of your own in the same
    format).
    Shift: ``ood``, names of :data:`calibnb.data.SHIFTS` whose logits are stored and whose
    out-of-distribution AUROC against the test set goes into ``metrics.json``.
    Calibration: ``n_bins`` and the criteria of the post-hoc temperature scaling and focal
    temperature scaling fitted on the validation set (``"ece"``, the papers' protocol, or
    ``"nll"``).
    """

    dataset: str = "fashion-mnist"
    model: str = "mlp"
    loss: str = "cross_entropy"
    loss_params: dict = field(default_factory=dict)
    model_params: dict = field(default_factory=dict)
    recipe: str = "cpu"
    epochs: int | None = None
    reduction: str | None = None
    batch_size: int | None = None
    lr: float | None = None
    weight_decay: float | None = None
    seed: int = 1
    split_seed: int = 1
    val_size: int = 5000
    train_size: int | None = None
    augment: bool | None = None
    adafocal_update_every: int | None = None
    data_root: str | None = None
    verify_data: bool = True
    workers: int | None = None
    device: str = "cpu"
    precision: str | None = None
    channels_last: bool | None = None
    compile: bool = False
    log_every: int | None = None
    ood: list = field(default_factory=list)
    n_bins: int = 15
    ts_criterion: str = "ece"
    fts_criterion: str = "ece"
    out_dir: str | None = None
    resume: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        from ..data import DATASETS
        from ..losses import LOSSES
        from ..models import MODELS, check_model_params

        check_choice(self.dataset, "dataset", DATASETS)
        check_choice(self.model, "model", MODELS)
        check_choice(self.loss, "loss", LOSSES)
        check_choice(self.recipe, "recipe", RECIPES)
        for name in ("loss_params", "model_params"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a dict, got {getattr(self, name)!r}")
        self._check_loss_params()
        check_model_params(self.model, self.model_params)
        if self.workers is not None:
            check_int(self.workers, "workers", minimum=0)
        for name in ("epochs", "batch_size", "train_size", "adafocal_update_every", "log_every"):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), name, minimum=1)
        for name in ("seed", "split_seed"):  # torch's generators take seeds below 2**63
            check_int(getattr(self, name), name, minimum=0, maximum=2**63 - 1)
        check_int(self.val_size, "val_size", minimum=1)
        check_n_bins(self.n_bins)
        if self.lr is not None:
            check_real(self.lr, "lr", minimum=0.0, strict_minimum=True)
        if self.weight_decay is not None:
            check_real(self.weight_decay, "weight_decay", minimum=0.0)
        if self.reduction is not None:
            check_choice(self.reduction, "reduction", ("mean", "sum"))
        check_choice(self.ts_criterion, "ts_criterion", ("ece", "nll"))
        check_choice(self.fts_criterion, "fts_criterion", ("ece", "nll"))
        if self.precision is not None:
            check_choice(self.precision, "precision", PRECISIONS)
        for name in ("augment", "channels_last"):
            if getattr(self, name) not in (None, True, False):
                raise TypeError(f"{name} must be True, False or None, got {getattr(self, name)!r}")
        for name in ("compile", "resume", "progress", "verify_data"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        self._check_ood()
        if self.adafocal_update_every is not None and not LOSSES[self.loss].learns_from_validation:
            learners = sorted(name for name, loss in LOSSES.items() if loss.learns_from_validation)
            raise ValueError(f"adafocal_update_every applies to the losses that learn from the validation set "
                             f"({', '.join(map(repr, learners))}), not loss={self.loss!r}")
        if self.resume and self.out_dir is None:
            raise ValueError("resume=True needs an out_dir holding the checkpoint")
        self._check_device()

    def _check_loss_params(self) -> None:
        from ..losses import get_loss

        if "validate" in self.loss_params:
            raise ValueError("loss_params: 'validate' is not a hyper-parameter; the training loop checks its "
                             "data once and builds the loss with validate=False")
        try:
            get_loss(self.loss, **self.loss_params)
        except TypeError as exc:
            raise ValueError(f"loss_params {self.loss_params} do not fit loss {self.loss!r}: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"loss_params: {exc}") from exc

    def _check_ood(self) -> None:
        from ..data import SHIFTS

        if not isinstance(self.ood, (list, tuple)):
            raise TypeError(f"ood must be a list of shift names, got {self.ood!r}")
        for name in self.ood:
            check_choice(name, "ood", SHIFTS)
        if len(set(self.ood)) != len(self.ood):
            raise ValueError(f"ood names a shift twice: {list(self.ood)}")
        if self.ood and self.dataset == "imagenet":
            raise ValueError("ood shifts are made from a test set held in memory; dataset 'imagenet' is streamed "
                             "from disk and has none")
        if self.ood and self.dataset == "mnist1d":
            raise ValueError("ood shifts are images; dataset 'mnist1d' holds 1-D signals")
        if "mnist" in self.ood and self.dataset != "fashion-mnist":
            raise ValueError(f"ood 'mnist' (28x28 digits) fits dataset 'fashion-mnist', not {self.dataset!r}")
        self.ood = list(self.ood)

    def _check_device(self) -> None:
        import torch

        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device {self.device!r} is not a torch device") from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {self.device!r} asked for, but CUDA is not available")

    @property
    def on_cuda(self) -> bool:
        import torch

        return torch.device(self.device).type == "cuda"

    @property
    def uses_bf16(self) -> bool:
        """Whether the forward pass runs under bf16 autocast (``precision``, default on CUDA)."""
        return self.on_cuda if self.precision is None else self.precision == "bf16"

    @property
    def resolved_recipe(self) -> Recipe:
        """The recipe with this run's overrides applied."""
        recipe = RECIPES[self.recipe]
        if self.epochs is not None:
            recipe = recipe.with_epochs(self.epochs)
        overrides = {k: getattr(self, k) for k in ("batch_size", "lr", "weight_decay", "reduction")}
        from dataclasses import replace

        return replace(recipe, **{k: v for k, v in overrides.items() if v is not None})

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint(self) -> str:
        """``parameters_hash()`` of what this run computes (every field but the
        :data:`calibnb.runs.EXECUTION_KEYS`): a checkpoint carries it, so it resumes only its own run."""
        return parameters_hash({k: v for k, v in asdict(self).items() if k not in EXECUTION_KEYS})

    @classmethod
    def from_namespace(cls, namespace: dict) -> "TrainConfig":
        """Build a config from a notebook's global variables: ``TrainConfig.from_namespace(globals())``
        right after the ``parameters`` cell.

        Every variable the notebook holds at that point is a parameter: its ``parameters`` cell's,
        and whatever papermill injected after it, so a name injected with a typo (``papermill -p
        gama 3``, which papermill itself only warns about) is refused here, with the closest known
        name, before anything runs. Modules, functions, classes, names starting with ``_`` and
        IPython's ``In``/``Out`` are not variables of the notebook and are skipped.
        """
        params = {name: value for name, value in namespace.items()
                  if not name.startswith("_") and name not in ("In", "Out")
                  and not inspect.ismodule(value) and not callable(value)}
        return cls.from_params(**params)

    @classmethod
    def from_params(cls, **params) -> "TrainConfig":
        """Build a config from flat notebook parameters.

        ``gamma``, ``lam`` and ``alpha`` given flat (as ``-p gamma 5`` on the command line) are
        moved into ``loss_params`` when not None; unknown names raise ``ValueError``.
        """
        params = dict(params)
        loss_params = dict(params.pop("loss_params", None) or {})
        for name in FLAT_LOSS_PARAMS:
            value = params.pop(name, None)
            if value is not None:
                loss_params[name] = value
        known = set(inspect.signature(cls).parameters)
        unknown = sorted(set(params) - known)
        if unknown:
            hint = did_you_mean(unknown[0], [*known, *FLAT_LOSS_PARAMS])
            raise ValueError(f"unknown training parameter(s) {unknown}{hint}; known: {sorted(known)}")
        return cls(loss_params=loss_params, **params)


def parameters_hash(params: dict) -> str:
    """The sha256 (hex) of ``params`` as sorted JSON, numbers compared by value (``3`` = ``3.0``)."""
    return hashlib.sha256(json.dumps(_by_value(params), sort_keys=True, default=str).encode()).hexdigest()


def _by_value(value):
    """``value`` with integral floats as ints, through lists and dicts."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_by_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _by_value(v) for k, v in value.items()}
    return value
