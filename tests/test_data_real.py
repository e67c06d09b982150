"""Fashion-MNIST and MNIST-1D on the real data (both are available offline).

Fashion-MNIST is read where Debian's ``dataset-fashion-mnist`` installs it (CI installs the
package); on a machine without it, the fixture falls back to the project's shared byte-exact copy.
"""

import gzip
import hashlib
import random
from pathlib import Path

import mnist1d.data
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from calibnb.data import EXPECTED_MD5, load_dataset, md5sum, train_val_split
from calibnb.data.datasets import FASHION_MNIST_MEAN, FASHION_MNIST_STD
from calibnb.data.readers import MNIST1D_ARGS
from calibnb.models import get_model

DEBIAN = Path("/usr/share/datasets/fashion-mnist")
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# torchvision.datasets.FashionMNIST.resources: md5 of the published .gz archives
PUBLISHED_GZ_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}


@pytest.fixture(scope="module")
def fashion_root():
    """None (use the Debian location) when the package is installed, else the shared copy."""
    if all((DEBIAN / name).is_file() for name in PUBLISHED_GZ_MD5):
        return None
    assert (SHARED / "fashion-mnist").is_dir(), "install dataset-fashion-mnist"
    return SHARED


@pytest.fixture(scope="module")
def fashion(fashion_root):
    return load_dataset("fashion-mnist", root=fashion_root)


def test_fashion_mnist_shapes_labels_and_statistics(fashion):
    assert fashion.x_train.shape == (60_000, 1, 28, 28) and fashion.x_train.dtype == torch.uint8
    assert fashion.x_test.shape == (10_000, 1, 28, 28)
    assert torch.bincount(fashion.y_train).tolist() == [6000] * 10  # balanced classes
    assert torch.bincount(fashion.y_test).tolist() == [1000] * 10
    pixels = fashion.x_train.double() / 255
    assert (round(pixels.mean().item(), 4),) == FASHION_MNIST_MEAN == fashion.mean
    assert (round(pixels.std().item(), 4),) == FASHION_MNIST_STD == fashion.std
    assert fashion.classes[9] == "Ankle boot" and fashion.num_classes == 10


@pytest.mark.slow
def test_fashion_mnist_content_md5s_come_from_the_published_archives(fashion_root):
    """Provenance of EXPECTED_MD5['fashion-mnist']: where the original archives are at hand
    (the shared copy restores their gzip headers), their md5 is torchvision's published one and
    the md5 of their decompressed content is the table's."""
    folder = SHARED / "fashion-mnist"
    for name, gz_md5 in PUBLISHED_GZ_MD5.items():
        assert hashlib.md5((folder / name).read_bytes()).hexdigest() == gz_md5
        with gzip.open(folder / name) as f:
            assert hashlib.md5(f.read()).hexdigest() == EXPECTED_MD5["fashion-mnist"][name]
    location = DEBIAN if fashion_root is None else fashion_root / "fashion-mnist"
    for name in PUBLISHED_GZ_MD5:  # the copy actually loaded has the same content
        assert md5sum(location / name) == EXPECTED_MD5["fashion-mnist"][name]


@pytest.mark.slow
def test_fashion_mnist_corrupt_copy_is_named(tmp_path, fashion_root):
    source = DEBIAN if fashion_root is None else fashion_root / "fashion-mnist"
    target = tmp_path / "fashion-mnist"
    target.mkdir()
    for name in PUBLISHED_GZ_MD5:
        (target / name).write_bytes((source / name).read_bytes())
    with gzip.open(source / "t10k-labels-idx1-ubyte.gz") as f:
        labels = bytearray(f.read())
    labels[100] = (labels[100] + 1) % 10
    with gzip.open(target / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(bytes(labels))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz"):
        load_dataset("fashion-mnist", root=tmp_path)


@pytest.mark.slow
def test_small_nets_learn_fashion_mnist(fashion):
    """One epoch on 6 000 training images: the MLP and the CNN beat 70 % test accuracy."""
    train_idx, _ = train_val_split(60_000, 5000, seed=1)
    x = fashion.x_train[train_idx[:6000]].float().div(255).sub(fashion.mean[0]).div(fashion.std[0])
    y = fashion.y_train[train_idx[:6000]]
    x_test = fashion.x_test[:1000].float().div(255).sub(fashion.mean[0]).div(fashion.std[0])
    for name, kwargs in [("mlp", {"in_features": 784}), ("small_cnn", {})]:
        torch.manual_seed(0)
        model = get_model(name, 10, **kwargs)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for i in range(0, len(y), 128):
            loss = F.cross_entropy(model(x[i:i + 128]), y[i:i + 128])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            accuracy = (model.eval()(x_test).argmax(1) == fashion.y_test[:1000]).float().mean()
        assert accuracy > 0.7, (name, accuracy)


@pytest.fixture(scope="module")
def mnist1d_data():
    return load_dataset("mnist1d")


def test_mnist1d_arguments_are_the_papers_defaults():
    defaults = mnist1d.data.get_dataset_args(as_dict=True)
    defaults.pop("url")
    assert MNIST1D_ARGS == defaults


@pytest.mark.slow
def test_mnist1d_is_the_published_generation(mnist1d_data):
    assert mnist1d_data.x_train.shape == (4000, 1, 40)
    assert mnist1d_data.x_test.shape == (1000, 1, 40)
    assert mnist1d_data.x_train.dtype == torch.float32 and mnist1d_data.y_train.dtype == torch.int64
    labels = torch.cat([mnist1d_data.y_train, mnist1d_data.y_test])
    assert torch.bincount(labels).tolist() == [500] * 10  # 5000 // 10 signals per digit
    # first values generated by mnist1d 0.0.2.post1 with seed 42 (measured when this test was
    # written; the generator's own output is the reference)
    assert mnist1d_data.y_train[:10].tolist() == [2, 6, 4, 5, 6, 6, 6, 0, 3, 1]
    np.testing.assert_allclose(
        mnist1d_data.x_train[0, 0, :5].numpy(),
        [-0.33200567, -0.47191037, -0.77869708, -1.00974083, -0.88235257], atol=1e-6,
    )
    all_x = torch.cat([mnist1d_data.x_train, mnist1d_data.x_test]).double()
    assert abs(all_x.mean().item()) < 1e-6 and abs(all_x.std().item() - 1) < 1e-3
    assert mnist1d_data.mean == (0.0,) and mnist1d_data.std == (1.0,)


@pytest.mark.slow
def test_mnist1d_generation_leaves_global_random_state_alone():
    np.random.seed(7)
    random.seed(7)
    expected = np.random.random_sample(2), random.random()
    np.random.seed(7)
    random.seed(7)
    from calibnb.data.readers import generate_mnist1d

    generate_mnist1d()
    assert np.array_equal(np.random.random_sample(2), expected[0])
    assert random.random() == expected[1]
