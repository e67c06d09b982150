"""Loaders for CIFAR-10/100, SVHN and CIFAR-10-C, on small files written in the published formats.

The real archives cannot be fetched here, so each test writes a few images in exactly the
released layout (same file names, keys, dtypes and array layouts):

* CIFAR python batches (https://www.cs.toronto.edu/~kriz/cifar.html): a pickled dict per batch
  with byte-string keys ``data`` ((n, 3072) uint8, the R, G, B 32×32 planes row-major),
  ``labels`` (list of int; CIFAR-100: ``fine_labels`` and ``coarse_labels``), ``batch_label``,
  ``filenames``; ``batches.meta`` (``label_names``) / ``meta`` (``fine_label_names``, ...).
* SVHN ``train_32x32.mat`` / ``test_32x32.mat``: ``X`` (32, 32, 3, n) uint8, ``y`` (n, 1) uint8
  with 10 standing for the digit 0.
* CIFAR-10-C: ``<corruption>.npy`` (5·m, 32, 32, 3) uint8, severities 1..5 stacked in blocks of m,
  and ``labels.npy`` (5·m,) uint8.
"""

import pickle
import sys
import types

import numpy as np
import pytest
import scipy.io
import torch

from data_files import dump, random_images, write_cifar10

from calibnb.data import EXPECTED_MD5, load_dataset, md5sum
from calibnb.data.readers import CIFAR10_CLASSES


def write_cifar100(root, rng):
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    out = {}
    for name, n in [("train", 6), ("test", 3)]:
        x, fine = random_images(rng, n), rng.integers(0, 100, n).tolist()
        dump(folder / name, {
            b"filenames": [b"x.png"] * n, b"batch_label": b"training batch 1 of 1",
            b"fine_labels": fine, b"coarse_labels": [f // 5 for f in fine],
            b"data": x.reshape(n, 3072),
        })
        out[name] = (x, fine)
    dump(folder / "meta", {
        b"fine_label_names": [f"class{i}".encode() for i in range(100)],
        b"coarse_label_names": [f"super{i}".encode() for i in range(20)],
    })
    return folder, out


def write_svhn(folder, rng):
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in [("train", 5), ("test", 4)]:
        X = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
        y = np.array([[10], [1], [9], [10], [3]][:n], dtype=np.uint8)
        scipy.io.savemat(folder / f"{split}_32x32.mat", {"X": X, "y": y})
        out[split] = (X, y)
    return out


def write_cifar10c(root, rng, m=2, corruption="gaussian_noise"):
    folder = root / "CIFAR-10-C"
    folder.mkdir(parents=True)
    x = rng.integers(0, 256, size=(5 * m, 32, 32, 3), dtype=np.uint8)
    labels = np.tile(rng.integers(0, 10, m).astype(np.uint8), 5)
    np.save(folder / f"{corruption}.npy", x)
    np.save(folder / "labels.npy", labels)
    return folder, x, labels


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv("CALIBNB_DATA", raising=False)


def trust(monkeypatch, dataset, folder, names):
    """Make the tiny files 'the published release' so the md5 path runs end to end."""
    table = {name: md5sum(folder / name) for name in names}
    monkeypatch.setitem(EXPECTED_MD5, dataset, table)


def test_cifar10_reads_planes_labels_and_class_names(tmp_path, rng):
    folder, images, labels = write_cifar10(tmp_path, rng)
    ds = load_dataset("cifar10", root=tmp_path, verify=False)
    train = np.concatenate([images[f"data_batch_{i}"] for i in range(1, 6)])
    assert ds.x_train.shape == (15, 3, 32, 32) and ds.x_train.dtype == torch.uint8
    assert np.array_equal(ds.x_train.numpy(), train)
    # pixel (c, h, w) of image n is byte c·1024 + h·32 + w of its row
    assert ds.x_test[2, 1, 5, 7] == images["test_batch"].reshape(4, 3072)[2, 1024 + 5 * 32 + 7]
    assert ds.y_train.dtype == torch.int64
    assert ds.y_train.tolist() == sum((labels[f"data_batch_{i}"] for i in range(1, 6)), [])
    assert ds.y_test.tolist() == labels["test_batch"]
    assert ds.classes == CIFAR10_CLASSES and ds.num_classes == 10
    assert ds.mean == (0.4914, 0.4822, 0.4465) and ds.std == (0.2023, 0.1994, 0.2010)


def test_cifar10_md5_verified_and_a_corrupt_file_is_named(tmp_path, rng, monkeypatch):
    folder, _, _ = write_cifar10(tmp_path, rng)
    trust(monkeypatch, "cifar10", folder, [p.name for p in folder.iterdir()])
    assert load_dataset("cifar10", root=tmp_path).x_train.shape[0] == 15
    raw = bytearray((folder / "data_batch_3").read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped pixel byte (the pixels are the bulk of the file)
    (folder / "data_batch_3").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="data_batch_3"):
        load_dataset("cifar10", root=tmp_path)
    assert load_dataset("cifar10", root=tmp_path, verify=False).x_train.shape[0] == 15


def test_published_md5s_reject_the_small_files(tmp_path, rng):
    write_cifar10(tmp_path, rng)
    with pytest.raises(ValueError, match="data_batch_1.*c99cafc152244af753f735de768cd75f"):
        load_dataset("cifar10", root=tmp_path)


def test_cifar100_reads_fine_labels(tmp_path, rng, monkeypatch):
    folder, out = write_cifar100(tmp_path, rng)
    trust(monkeypatch, "cifar100", folder, ["train", "test", "meta"])
    ds = load_dataset("cifar100", root=tmp_path / "cifar-100-python")  # root = the folder itself
    assert np.array_equal(ds.x_train.numpy(), out["train"][0])
    assert ds.y_train.tolist() == out["train"][1] and ds.y_test.tolist() == out["test"][1]
    assert ds.num_classes == 100 and ds.classes[7] == "class7"


def test_svhn_transposes_to_nchw_and_maps_label_10_to_0(tmp_path, rng, monkeypatch):
    out = write_svhn(tmp_path / "svhn", rng)
    trust(monkeypatch, "svhn", tmp_path / "svhn", ["train_32x32.mat", "test_32x32.mat"])
    ds = load_dataset("svhn", root=tmp_path)
    X, y = out["train"]
    assert ds.x_train.shape == (5, 3, 32, 32)
    assert ds.x_train[4, 2, 3, 17] == X[3, 17, 2, 4]  # X[h, w, c, n] → x[n, c, h, w]
    assert ds.y_train.tolist() == [0, 1, 9, 0, 3] and ds.y_test.tolist() == [0, 1, 9, 0]
    assert ds.classes == tuple("0123456789")


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_cifar10c_takes_the_severity_block(tmp_path, rng, severity):
    _, x, labels = write_cifar10c(tmp_path, rng, m=2)
    ds = load_dataset("cifar10c", root=tmp_path, verify=False, severity=severity)
    block = slice(2 * (severity - 1), 2 * severity)
    assert np.array_equal(ds.x_test.numpy(), x[block].transpose(0, 3, 1, 2))
    assert ds.y_test.tolist() == labels[block].tolist()
    assert ds.x_train.shape == (0, 3, 32, 32) and ds.y_train.shape == (0,)
    assert ds.info["corruption"] == "gaussian_noise" and ds.info["severity"] == severity


def test_cifar10c_layout_and_published_size_are_checked(tmp_path, rng):
    folder, x, labels = write_cifar10c(tmp_path, rng, m=2)
    with pytest.raises(ValueError, match="gaussian_noise.npy.*50000"):
        load_dataset("cifar10c", root=tmp_path)  # verify=True: the release has 50 000 images
    np.save(folder / "labels.npy", labels[:-1])
    with pytest.raises(ValueError, match="labels.npy"):
        load_dataset("cifar10c", root=tmp_path, verify=False)
    np.save(folder / "fog.npy", x[:, :, :, :2])
    np.save(folder / "labels.npy", labels)
    with pytest.raises(ValueError, match="fog.npy"):
        load_dataset("cifar10c", root=tmp_path, verify=False, corruption="fog")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(name="cifar11"), ValueError, "name"),
    (dict(name="cifar10c", corruption="rain"), ValueError, "corruption"),
    (dict(name="cifar10c", severity=6), ValueError, "severity"),
    (dict(name="cifar10c", severity=0), ValueError, "severity"),
    (dict(name="cifar10", severity=5), ValueError, "cifar10c"),
    (dict(name="cifar10", download="yes"), TypeError, "download"),
    (dict(name="cifar10", verify=1), TypeError, "verify"),
])
def test_load_dataset_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        load_dataset(**kwargs)


def test_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_dataset("cifar10", root=tmp_path)
    message = str(info.value)
    assert "data_batch_1" in message and "cifar-10-python.tar.gz" in message
    assert str(tmp_path / "cifar-10-batches-py") in message and "CALIBNB_DATA" in message


def test_calibnb_data_is_searched_after_root(tmp_path, rng, monkeypatch):
    write_svhn(tmp_path / "env" / "svhn", rng)
    monkeypatch.setenv("CALIBNB_DATA", str(tmp_path / "env"))
    ds = load_dataset("svhn", verify=False)
    assert ds.info["folder"] == str(tmp_path / "env" / "svhn")
    write_svhn(tmp_path / "mine", np.random.default_rng(1))
    ds = load_dataset("svhn", root=tmp_path / "mine", verify=False)
    assert ds.info["folder"] == str(tmp_path / "mine")


def test_download_without_torchvision_explains_the_manual_route(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)  # `import torchvision` fails
    with pytest.raises(FileNotFoundError, match="torchvision.*\n(.|\n)*cifar-100-python.tar.gz"):
        load_dataset("cifar100", root=tmp_path, download=True)


def test_download_uses_torchvision_when_it_imports(tmp_path, rng, monkeypatch):
    calls = []

    def fake_cifar10(root, train=True, download=False):  # writes what torchvision would
        calls.append((root, train, download))
        write_cifar10(tmp_path, rng)

    fake = types.ModuleType("torchvision")
    fake.datasets = types.SimpleNamespace(CIFAR10=fake_cifar10)
    monkeypatch.setitem(sys.modules, "torchvision", fake)
    ds = load_dataset("cifar10", root=tmp_path, download=True, verify=False)
    assert calls == [(str(tmp_path), True, True)] and ds.x_test.shape[0] == 4
    load_dataset("cifar10", root=tmp_path, download=True, verify=False)
    assert len(calls) == 1  # present files are not fetched again
    with pytest.raises(FileNotFoundError, match="no CIFAR-10-C downloader"):
        load_dataset("cifar10c", root=tmp_path, download=True)


def test_returned_tensors_are_copies_of_the_cache(tmp_path, rng):
    write_cifar10(tmp_path, rng)
    first = load_dataset("cifar10", root=tmp_path, verify=False)
    first.x_train.zero_()
    assert load_dataset("cifar10", root=tmp_path, verify=False).x_train.any()


def test_cifar_batches_repickled_by_python3_also_load(tmp_path, rng):
    """Keys may be text rather than bytes when someone re-saved the batches with Python 3."""
    folder, images, _ = write_cifar10(tmp_path, rng)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
        with open(folder / name, "rb") as f:
            entry = pickle.load(f, encoding="latin1")  # text keys, as torchvision reads them
        with open(folder / name, "wb") as f:
            pickle.dump(entry, f)
    ds = load_dataset("cifar10", root=tmp_path, verify=False)
    assert np.array_equal(ds.x_test.numpy(), images["test_batch"])
    assert ds.classes == CIFAR10_CLASSES


def test_labels_outside_the_classes_are_rejected(tmp_path, rng):
    folder, _, _ = write_cifar10(tmp_path, rng)
    dump(folder / "test_batch", {
        b"batch_label": b"testing batch 1 of 1", b"labels": [3, 10],
        b"data": random_images(rng, 2).reshape(2, 3072), b"filenames": [b"a.png", b"b.png"],
    })
    with pytest.raises(ValueError, match=r"test labels outside \[0, 10\)"):
        load_dataset("cifar10", root=tmp_path, verify=False)


DAMAGED = {"fashion-mnist": ("fashion-mnist", ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]),
           "svhn": ("svhn", ["train_32x32.mat", "test_32x32.mat"]),
           "cifar10c": ("CIFAR-10-C", ["gaussian_noise.npy", "labels.npy"]),
           "cifar100": ("cifar-100-python", ["train", "test", "meta"])}


@pytest.mark.parametrize("content", [b"garbage", b"", b"\x1f\x8b\x08\x00" + bytes(20)], ids=["text", "empty", "gzip header"])
@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_data_file_is_refused_naming_it(tmp_path, name, content):
    folder, files = DAMAGED[name]
    (tmp_path / folder).mkdir()
    for file in files:
        (tmp_path / folder / file).write_bytes(content)
    with pytest.raises(ValueError, match=str(tmp_path / folder)):
        load_dataset(name, root=tmp_path, verify=False)


def test_a_cifar_batch_without_its_keys_is_refused_naming_it(tmp_path, rng):
    folder, _, _ = write_cifar10(tmp_path, rng)
    dump(folder / "data_batch_3", {b"labels": [1, 2]})  # no 'data'
    with pytest.raises(ValueError, match=r"data_batch_3 is not a cifar10 batch .*KeyError"):
        load_dataset("cifar10", root=tmp_path, verify=False)
