"""Networks: the papers' CIFAR models and small CPU nets, built by name with :func:`get_model`.

============================  ==============================================================
``get_model`` name            network
============================  ==============================================================
``resnet50``                  CIFAR ResNet-50, bottlenecks [3, 4, 6, 3] (64×64: Tiny-ImageNet's; 224×224: ImageNet's)
``resnet110``                 the papers' 4-stage bottleneck "ResNet-110", [3, 4, 26, 3]
``wide_resnet26_10``          WRN-26-10, post-activation basic blocks, widths 160/320/640
``densenet121``               CIFAR DenseNet-121, blocks [6, 12, 24, 16], growth 32 (224×224: ImageNet's)
``mlp``                       :class:`~calibnb.models.small.MLP` (``in_features`` required)
``small_cnn``                 :class:`~calibnb.models.small.SmallCNN`
``cnn1d``                     :class:`~calibnb.models.small.ConvNet1d` (MNIST-1D)
``global_pooling_cnn``        :class:`~calibnb.models.text_cnn.GlobalPoolingCNN` (token ids, GloVe)
``bert``                      :class:`~calibnb.models.bert.BertClassifier` (``calibnb[text]``)
============================  ==============================================================

The four papers' nets follow ``torrvision/focal_calibration``'s ``Net/`` (module docstrings list
the differences: none changes a 32×32 forward pass). ``in_channels=1`` adapts them to
Fashion-MNIST's 28×28 grey images: the stem takes one channel and the global average pool takes
whatever final map the smaller input produces, so no padding to 32×32 is needed. Every model
accepts ``channels_last`` inputs/weights and runs under ``torch.autocast`` (bf16). The ResNets
also take ``image_size``: 64 builds the reference's Tiny-ImageNet net (``Net/resnet_tiny_imagenet.py``:
a 2×2 pool before an 8192-feature classifier, see ``calibnb.models.resnet``); 224, as the
ImageNet loader's crops are, builds torchvision's ImageNet nets (``calibnb.models.imagenet``;
``densenet121`` too).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence

from torch import nn

from .._validation import check_choice, check_int, did_you_mean
from .densenet import DenseNet, densenet121
from .resnet import ResNet, resnet50, resnet110
from .small import MLP, ConvNet1d, SmallCNN
from .bert import BertClassifier
from .text_cnn import GlobalPoolingCNN
from .wide_resnet import WideResNet, wide_resnet26_10

_FACTORIES: dict[str, Callable[..., nn.Module]] = {
    "resnet50": resnet50,
    "resnet110": resnet110,
    "wide_resnet26_10": wide_resnet26_10,
    "densenet121": densenet121,
    "mlp": MLP,
    "small_cnn": SmallCNN,
    "cnn1d": ConvNet1d,
    "global_pooling_cnn": GlobalPoolingCNN,
    "bert": BertClassifier,
}
#: The names :func:`get_model` builds.
MODELS = tuple(_FACTORIES)
#: The networks whose layers depend on the input's side (``image_size``).
_SIZED = ("resnet50", "resnet110", "densenet121")
#: The networks that take token ids ``(N, L)``: their input shape fixes nothing of their layers.
TEXT_MODELS = ("global_pooling_cnn", "bert")


def get_model(
    name: str, num_classes: int, *, input_shape: Sequence[int] | None = None, **kwargs
) -> nn.Module:
    """Build the network ``name`` with ``num_classes`` outputs (logits).

    ``input_shape``, one example's shape without the batch dimension (``(1, 28, 28)``,
    ``(3, 32, 32)``, ``(1, 40)``), fills in what the network needs to know about its input:
    ``in_channels`` = ``input_shape[0]``, ``in_features`` = its product (``mlp``), ``length`` =
    its last entry (``cnn1d``), ``image_size`` = its last entry (``resnet50``, ``resnet110``: 64
    builds the Tiny-ImageNet net, 224 the ImageNet net; ``densenet121``: 224 the ImageNet net). Explicit ``kwargs`` win. Other ``kwargs`` go to the network:
    ``in_channels`` (default 3 for the CIFAR nets, 1 for the small nets), ``hidden`` (``mlp``),
    ``widths`` and ``pool`` (``small_cnn``), ``channels`` (``cnn1d``).
    """
    check_choice(name, "name", MODELS)
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    if input_shape is not None:
        shape = tuple(check_int(d, "input_shape", minimum=1) for d in input_shape)
        if not shape:
            raise ValueError("input_shape must be one example's shape, e.g. (3, 32, 32)")
        derived = {"in_features": math.prod(shape)} if name == "mlp" else {"in_channels": shape[0]}
        if name in TEXT_MODELS:
            derived = {}
        if name == "cnn1d":
            derived["length"] = shape[-1]
        if name in _SIZED and len(shape) == 3:
            derived["image_size"] = shape[-1]
        kwargs = {**derived, **kwargs}
    if name == "mlp" and "in_features" not in kwargs:
        raise TypeError("get_model('mlp', ...) needs in_features or input_shape (e.g. 784)")
    if "in_channels" in kwargs:
        check_int(kwargs["in_channels"], "in_channels", minimum=1)
    try:
        return _FACTORIES[name](num_classes=num_classes, **kwargs)
    except TypeError as exc:
        raise TypeError(f"get_model({name!r}): {exc}") from exc


def check_model_params(name: str, params: dict) -> dict:
    """Refuse a keyword that network ``name`` does not take (with the closest one it takes), so a
    misspelled ``model_params`` key fails when a run is planned, not when its model is built."""
    check_choice(name, "model", MODELS)
    taken = set(inspect.signature(_FACTORIES[name]).parameters) - {"num_classes"}
    for key in params:
        if key not in taken:
            raise ValueError(f"model_params: {name!r} takes no {key!r}{did_you_mean(key, taken)}; it takes {sorted(taken)}")
    return params


__all__ = [
    "MODELS",
    "check_model_params",
    "ConvNet1d",
    "BertClassifier",
    "DenseNet",
    "GlobalPoolingCNN",
    "TEXT_MODELS",
    "MLP",
    "ResNet",
    "SmallCNN",
    "WideResNet",
    "densenet121",
    "get_model",
    "resnet50",
    "resnet110",
    "wide_resnet26_10",
]
