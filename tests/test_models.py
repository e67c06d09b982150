"""The papers' CIFAR networks and the small CPU nets.

Parameter counts are checked against an independent layer-by-layer count of the reference
architectures, written from reading ``torrvision/focal_calibration``'s ``Net/resnet.py``
(``ResNet``/``Bottleneck``, ``resnet50`` = [3, 4, 6, 3], ``resnet110`` = [3, 4, 26, 3]),
``Net/wide_resnet.py`` (``wide_resnet_cifar(depth=26, width=10)``) and ``Net/densenet.py``
(``densenet121``): a k×k convolution without bias has c_in·c_out·k² weights, a batch norm 2·c
(weight and bias; running statistics are buffers), a linear layer c_in·c_out + c_out.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from calibnb.models import MODELS, get_model


def conv(c_in, c_out, k):
    return c_in * c_out * k * k


def bn(c):
    return 2 * c


def linear(c_in, c_out):
    return c_in * c_out + c_out


def reference_resnet_params(blocks, num_classes, pooled=1):
    """Net/resnet.py: 3×3 stem (3→64) + BN, bottleneck stages of 64/128/256/512 planes; the
    classifier reads 2048 features per cell of the ``pooled`` × ``pooled`` final grid
    (Net/resnet_tiny_imagenet.py: ``AdaptiveAvgPool2d(2)``, ``Linear(512 * 4 * 4, 200)``)."""
    total = conv(3, 64, 3) + bn(64)
    in_planes = 64
    for planes, n, stride in zip((64, 128, 256, 512), blocks, (1, 2, 2, 2)):
        for s in [stride] + [1] * (n - 1):
            total += conv(in_planes, planes, 1) + bn(planes)
            total += conv(planes, planes, 3) + bn(planes)
            total += conv(planes, 4 * planes, 1) + bn(4 * planes)
            if s != 1 or in_planes != 4 * planes:  # projection shortcut
                total += conv(in_planes, 4 * planes, 1) + bn(4 * planes)
            in_planes = 4 * planes
    return total + linear(2048 * pooled**2, num_classes)


def reference_wrn_params(depth, width, num_classes):
    """Net/wide_resnet.py: 3×3 stem (3→16) + BN, 3 stages of (depth-2)/6 basic blocks."""
    n = (depth - 2) // 6
    total = conv(3, 16, 3) + bn(16)
    in_planes = 16
    for planes, stride in zip((16 * width, 32 * width, 64 * width), (1, 2, 2)):
        for i in range(n):
            c_in = in_planes if i == 0 else planes
            total += conv(c_in, planes, 3) + bn(planes) + conv(planes, planes, 3) + bn(planes)
            if i == 0 and (stride != 1 or in_planes != planes):  # downsample
                total += conv(in_planes, planes, 1) + bn(planes)
        in_planes = planes
    return total + linear(64 * width, num_classes)


def reference_densenet_params(blocks, growth, num_classes):
    """Net/densenet.py: 3×3 stem (3→2g), layers BN-1×1(4g)-BN-3×3(g), transitions ×0.5."""
    total = conv(3, 2 * growth, 3)
    c = 2 * growth
    for i, n in enumerate(blocks):
        for j in range(n):
            c_j = c + j * growth
            total += bn(c_j) + conv(c_j, 4 * growth, 1)
            total += bn(4 * growth) + conv(4 * growth, growth, 3)
        c += n * growth
        if i < len(blocks) - 1:
            total += bn(c) + conv(c, math.floor(c * 0.5), 1)
            c = math.floor(c * 0.5)
    return total + bn(c) + linear(c, num_classes)


REFERENCE = {
    "resnet50": lambda k: reference_resnet_params((3, 4, 6, 3), k),
    "resnet110": lambda k: reference_resnet_params((3, 4, 26, 3), k),
    "wide_resnet26_10": lambda k: reference_wrn_params(26, 10, k),
    "densenet121": lambda k: reference_densenet_params((6, 12, 24, 16), 32, k),
}
# What the formulas give (CIFAR-10, CIFAR-100); resnet50 and densenet121 are also the counts
# commonly quoted for kuangliu/pytorch-cifar, which the reference's Net/ files follow.
EXPECTED = {
    "resnet50": (23_520_842, 23_705_252),
    "resnet110": (45_864_522, 46_048_932),
    "wide_resnet26_10": (36_481_434, 36_539_124),
    "densenet121": (6_956_298, 7_048_548),
}


def n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", list(REFERENCE))
@pytest.mark.parametrize("num_classes", [10, 100])
def test_parameter_counts_match_reference_architecture(name, num_classes):
    model = get_model(name, num_classes)
    assert n_params(model) == REFERENCE[name](num_classes)
    assert n_params(model) == EXPECTED[name][num_classes == 100]


def test_state_dict_names_match_the_reference_modules():
    """Module names follow Net/*.py, so the authors' checkpoints load with load_state_dict."""
    r50 = get_model("resnet50", 10).state_dict()
    assert r50["layer1.0.shortcut.0.weight"].shape == (256, 64, 1, 1)
    assert r50["layer4.2.conv3.weight"].shape == (2048, 512, 1, 1)
    assert r50["fc.weight"].shape == (10, 2048)
    assert "layer1.1.shortcut.0.weight" not in r50  # identity shortcut, empty Sequential
    wrn = get_model("wide_resnet26_10", 100).state_dict()
    assert wrn["layer1.0.downsample.0.weight"].shape == (160, 16, 1, 1)
    assert wrn["layer3.3.conv2.weight"].shape == (640, 640, 3, 3)
    assert wrn["fc.weight"].shape == (100, 640)
    dn = get_model("densenet121", 10).state_dict()
    assert dn["trans1.conv.weight"].shape == (128, 256, 1, 1)  # 64 + 6·32 = 256 → 128
    assert dn["dense4.15.conv2.weight"].shape == (32, 128, 3, 3)
    assert dn["linear.weight"].shape == (10, 1024)  # 512 + 16·32
    r110 = get_model("resnet110", 10).state_dict()
    assert "layer3.25.conv3.weight" in r110 and "layer3.26.conv1.weight" not in r110


#: Net/resnet_tiny_imagenet.py at 200 classes, by the formula (the body is the CIFAR net's).
TINY_IMAGENET_EXPECTED = {"resnet50": 25_138_952, "resnet110": 47_482_632}


@pytest.mark.parametrize("name, blocks", [("resnet50", (3, 4, 6, 3)), ("resnet110", (3, 4, 26, 3))])
def test_tiny_imagenet_resnets_match_the_reference_count(name, blocks):
    model = get_model(name, 200, input_shape=(3, 64, 64))
    assert n_params(model) == reference_resnet_params(blocks, 200, pooled=2) == TINY_IMAGENET_EXPECTED[name]
    assert model.fc.in_features == 8192 and model.pool_grid == 2
    # the reference's train.py builds resnet50_ti for Tiny-ImageNet; its CIFAR net cannot take 64×64
    assert n_params(model) - n_params(get_model(name, 200)) == linear(8192, 200) - linear(2048, 200)


def test_tiny_imagenet_resnet_pools_the_reference_windows_and_is_he_initialised():
    """AdaptiveAvgPool2d(2) on the 8×8 final map of a 64×64 image: the 4×4 windows of the CIFAR
    net's avg_pool2d(4); convolutions drawn from N(0, 2 / (k²·c_out))."""
    torch.manual_seed(0)
    model = get_model("resnet50", 200, input_shape=(3, 64, 64)).eval()
    seen = {}
    model.layer4.register_forward_hook(lambda m, i, out: seen.update(feat=out))
    with torch.no_grad():
        out = model(torch.randn(2, 3, 64, 64))
    assert seen["feat"].shape == (2, 2048, 8, 8) and out.shape == (2, 200)
    torch.testing.assert_close(out, model.fc(F.avg_pool2d(seen["feat"], 4).flatten(1)))
    weight = model.layer4[0].conv2.weight  # 512·512·9 draws
    assert abs(weight.std().item() / math.sqrt(2 / (9 * 512)) - 1) < 0.01
    cifar = get_model("resnet50", 200, input_shape=(3, 32, 32)).layer4[0].conv2.weight  # PyTorch's default
    assert abs(cifar.std().item() / math.sqrt(2 / (9 * 512)) - 1) > 0.2
    with pytest.raises(ValueError, match="image_size: the papers' ResNets take images of up to 32 pixels"):
        get_model("resnet50", 200, input_shape=(3, 48, 48))


@pytest.mark.slow
def test_resnet50_forward_shape_and_reference_pooling():
    """At 32×32 the final map is 4×4, where the global pool equals the reference avg_pool2d(4)."""
    torch.manual_seed(0)
    model = get_model("resnet50", 100).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = model(x)
        stem = F.relu(model.bn1(model.conv1(x)))
        feat = model.layer4(model.layer3(model.layer2(model.layer1(stem))))
    assert out.shape == (2, 100)
    assert feat.shape == (2, 2048, 4, 4)
    torch.testing.assert_close(out, model.fc(F.avg_pool2d(feat, 4).flatten(1)))


@pytest.mark.slow
@pytest.mark.parametrize("name, last, final_map, pool", [
    ("wide_resnet26_10", "layer3", (640, 8, 8), 8),  # reference: nn.AvgPool2d(8, stride=1)
    ("densenet121", "bn", (1024, 4, 4), 4),  # reference: F.avg_pool2d(relu(bn(out)), 4)
    ("resnet110", "layer4", (2048, 4, 4), 4),  # reference: F.avg_pool2d(out, 4)
])
def test_big_nets_forward_shape_and_reference_pooling(name, last, final_map, pool):
    """One 32×32 image: the logits equal the classifier applied to the reference's fixed pool."""
    torch.manual_seed(0)
    model = get_model(name, 10).eval()
    head = model.linear if name == "densenet121" else model.fc
    seen = {}
    getattr(model, last).register_forward_hook(lambda m, i, out: seen.update(feat=out))
    with torch.no_grad():
        out = model(torch.randn(1, 3, 32, 32))
        feat = F.relu(seen["feat"]) if name == "densenet121" else seen["feat"]
        assert tuple(feat.shape[1:]) == final_map
        torch.testing.assert_close(out, head(F.avg_pool2d(feat, pool).flatten(1)))
    assert out.shape == (1, 10)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REFERENCE))
def test_cifar_nets_take_one_channel_28x28(name):
    """Fashion-MNIST: in_channels=1, 28×28 images, no padding (global pooling adapts)."""
    model = get_model(name, 10, in_channels=1).eval()
    assert model.conv1.in_channels == 1
    with torch.no_grad():
        out = model(torch.randn(1, 1, 28, 28))
    assert out.shape == (1, 10) and torch.isfinite(out).all()


def test_one_channel_stem_changes_only_the_first_convolution():
    k3 = n_params(get_model("resnet50", 10))
    k1 = n_params(get_model("resnet50", 10, in_channels=1))
    assert k3 - k1 == conv(3, 64, 3) - conv(1, 64, 3)


SMALL = [
    ("mlp", dict(in_features=784, hidden=(128, 64)), (4, 1, 28, 28),
     linear(784, 128) + linear(128, 64) + linear(64, 10)),
    ("mlp", dict(in_features=40, hidden=(100, 100)), (4, 1, 40),  # the MNIST-1D paper's MLP
     linear(40, 100) + linear(100, 100) + linear(100, 10)),
    ("small_cnn", dict(), (4, 1, 28, 28),
     conv(1, 16, 3) + bn(16) + conv(16, 32, 3) + bn(32) + linear(32 * 4 * 4, 10)),
    ("small_cnn", dict(in_channels=3, widths=(8, 16, 32), pool=2), (4, 3, 32, 32),
     conv(3, 8, 3) + bn(8) + conv(8, 16, 3) + bn(16) + conv(16, 32, 3) + bn(32)
     + linear(32 * 2 * 2, 10)),
    # MNIST-1D CNN: length 40 → 19 → 10 → 5 after the three stride-2 convolutions
    ("cnn1d", dict(), (4, 1, 40),
     conv(1, 25, 5) // 5 + 25 + 2 * (25 * 25 * 3 + 25) + linear(25 * 5, 10)),
]


@pytest.mark.parametrize("name, kwargs, shape, expected", SMALL)
def test_small_nets_shapes_and_sizes(name, kwargs, shape, expected):
    model = get_model(name, 10, **kwargs)
    assert n_params(model) == expected
    assert model(torch.randn(shape)).shape == (shape[0], 10)


# The CIFAR nets on 8×8 inputs keep the CPU test short; the layers and code paths are the same.
BIG = pytest.mark.slow


@pytest.mark.parametrize("name, kwargs, shape", [
    pytest.param("resnet50", {}, (2, 3, 8, 8), marks=BIG),
    pytest.param("densenet121", {}, (2, 3, 8, 8), marks=BIG),
    pytest.param("wide_resnet26_10", {}, (2, 3, 8, 8), marks=BIG),
    ("small_cnn", {}, (8, 1, 28, 28)),
    ("mlp", {"in_features": 3 * 32 * 32}, (8, 3, 32, 32)),
])
def test_channels_last_gives_the_same_logits(name, kwargs, shape):
    torch.manual_seed(0)
    model = get_model(name, 10, **kwargs).eval()
    x = torch.randn(shape)
    with torch.no_grad():
        ref = model(x)
        model = model.to(memory_format=torch.channels_last)
        out = model(x.to(memory_format=torch.channels_last))
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name, kwargs, shape", [
    pytest.param("resnet50", {}, (2, 3, 8, 8), marks=BIG),
    pytest.param("densenet121", {}, (2, 3, 8, 8), marks=BIG),
    ("small_cnn", {}, (8, 1, 28, 28)),
    ("mlp", {"in_features": 40}, (8, 1, 40)),
    ("cnn1d", {}, (8, 1, 40)),
])
def test_bf16_autocast_forward_and_backward(name, kwargs, shape):
    torch.manual_seed(0)
    model = get_model(name, 10, **kwargs).eval()
    x, y = torch.randn(shape), torch.randint(0, 10, (shape[0],))
    with torch.no_grad():
        ref = model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(x)
    assert low.dtype == torch.bfloat16
    assert (low.float() - ref).abs().max() < 0.1 * ref.abs().max() + 0.02
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("name, shape, attribute, expected", [
    ("mlp", (1, 28, 28), "net.1.in_features", 784),
    ("small_cnn", (3, 32, 32), "features.0.in_channels", 3),
    ("cnn1d", (1, 60), "fc.in_features", 25 * 8),  # length 60 → 29 → 15 → 8
    ("resnet50", (1, 28, 28), "conv1.in_channels", 1),
])
def test_input_shape_fills_in_the_input_arguments(name, shape, attribute, expected):
    model = get_model(name, 10, input_shape=shape)
    value = model.get_submodule(attribute.rsplit(".", 1)[0])
    assert getattr(value, attribute.rsplit(".", 1)[1]) == expected
    assert model.eval()(torch.randn(2, *shape)).shape == (2, 10)


def test_explicit_arguments_win_over_input_shape():
    model = get_model("mlp", 10, input_shape=(1, 28, 28), in_features=784, hidden=(32,))
    assert model.net[1].out_features == 32
    with pytest.raises(ValueError, match="input_shape"):
        get_model("small_cnn", 10, input_shape=(0, 28, 28))


def test_get_model_validates_its_arguments():
    assert set(MODELS) >= {"resnet50", "resnet110", "wide_resnet26_10", "densenet121"}
    with pytest.raises(ValueError, match="name"):
        get_model("resnet18", 10)
    with pytest.raises(ValueError, match="num_classes"):
        get_model("resnet50", 1)
    with pytest.raises(TypeError, match="num_classes"):
        get_model("resnet50", 10.0)
    with pytest.raises(TypeError, match="in_features"):
        get_model("mlp", 10)
    with pytest.raises(ValueError, match="in_channels"):
        get_model("small_cnn", 10, in_channels=0)
    with pytest.raises(TypeError, match="wide_resnet26_10"):
        get_model("wide_resnet26_10", 10, widths=(1, 2))


@pytest.mark.parametrize("name, expected", [("resnet50", 25_557_032), ("densenet121", 7_978_856),
                                            ("resnet110", 47_900_712)])
def test_imagenet_nets_have_torchvisions_parameter_counts(name, expected):
    """At 224×224 and 1000 classes, ``get_model`` builds torchvision's ImageNet nets: ResNet-50
    and DenseNet-121 have torchvision's published parameter counts (``resnet50``: 25,557,032,
    ``densenet121``: 7,978,856); "ResNet-110" is the same ResNet with bottlenecks [3, 4, 26, 3],
    i.e. ResNet-50 plus 20 bottlenecks of 1024 → 256 → 256 → 1024 channels."""
    model = get_model(name, 1000, input_shape=(3, 224, 224))
    assert n_params(model) == expected
    if name == "resnet110":
        block = 1024 * 256 + 9 * 256 * 256 + 256 * 1024 + 2 * (256 + 256 + 1024)
        assert expected == 25_557_032 + 20 * block


def test_imagenet_nets_use_torchvisions_module_names_and_map_224_to_logits():
    """torchvision's ``state_dict`` keys (so its checkpoints load), and a 224×224 batch in,
    ``(N, K)`` logits out."""
    import torch

    r50 = get_model("resnet50", 1000, input_shape=(3, 224, 224)).state_dict()
    assert {"conv1.weight", "bn1.running_mean", "layer1.0.downsample.0.weight", "layer4.2.conv3.weight",
            "fc.weight", "fc.bias"} <= set(r50)
    assert len(r50) == 320  # torchvision resnet50's state_dict has 320 entries
    dn = get_model("densenet121", 1000, input_shape=(3, 224, 224)).state_dict()
    assert {"features.conv0.weight", "features.denseblock1.denselayer1.norm1.weight",
            "features.denseblock4.denselayer16.conv2.weight", "features.transition3.conv.weight",
            "features.norm5.weight", "classifier.weight"} <= set(dn)
    model = get_model("densenet121", 7, input_shape=(3, 224, 224)).eval()
    with torch.no_grad():
        assert model(torch.zeros(2, 3, 224, 224)).shape == (2, 7)
@pytest.mark.parametrize("num_classes, trainable", [(20, 247_316), (4, 245_252)])
def test_global_pooling_cnn_has_the_reference_codes_layers_and_parameter_count(num_classes, trainable):
    """20ng_mmce.py's network: conv(100→128, 5), pool 5/1, conv(128, 5), pool 5/1, conv(128, 5),
    global max, dense 128, dense K; the 20,000 × 100 GloVe embedding is frozen. Counted by hand:
    3 convolutions 64,128 + 82,048 + 82,048, dense 16,512, output 129·K."""
    model = get_model("global_pooling_cnn", num_classes, input_shape=(1000,))
    assert 64_128 + 2 * 82_048 + 16_512 + 129 * num_classes == trainable
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == trainable
    assert model.embedding.weight.shape == (20_000, 100) and not model.embedding.weight.requires_grad
    ids = torch.randint(0, 20_000, (3, 1000))
    assert model(ids).shape == (3, num_classes)
    # global max pooling: the output does not depend on the length (21 is the shortest input)
    assert model.eval()(torch.randint(0, 20_000, (2, 21))).shape == (2, num_classes)


def test_global_pooling_cnn_takes_glove_vectors_frozen_with_padding_at_zero():
    vectors = torch.randn(7, 100)
    vectors[0] = 0
    model = get_model("global_pooling_cnn", 3, embeddings=vectors)
    torch.testing.assert_close(model.embedding.weight, vectors)
    out = model(torch.tensor([[0] * 20 + [3]]))
    out.sum().backward()
    assert model.embedding.weight.grad is None and model.features[0].weight.grad is not None
    with pytest.raises(ValueError, match="embeddings must be"):
        get_model("global_pooling_cnn", 3, embeddings=torch.zeros(5))


def test_bert_without_transformers_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'calibnb\[text\]'"):
        get_model("bert", 20)


def test_he_init_refuses_an_unknown_fan_and_starts_batchnorm_as_the_identity():
    import torch
    from torch import nn

    from calibnb.models.init import he_init

    with pytest.raises(ValueError, match="mode"):
        he_init(nn.Conv2d(3, 8, 3), mode="fan_avg")
    model = nn.Sequential(nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32))
    nn.init.constant_(model[1].weight, 5.0)
    torch.manual_seed(0)
    he_init(model, mode="fan_in")
    assert torch.equal(model[1].weight, torch.ones(32)) and torch.equal(model[1].bias, torch.zeros(32))
    assert model[0].weight.std().item() == pytest.approx((2 / (16 * 9)) ** 0.5, rel=0.05)
