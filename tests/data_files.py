"""Small files in the published formats of the CIFAR python batches, for tests that read them
(the real archives cannot be fetched here); :mod:`test_data_formats` documents the layouts."""

import io
import pickle
import struct

import numpy as np

from calibnb.data.readers import CIFAR10_CLASSES


def random_images(rng, n):
    return rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)


class Py2Pickler(pickle._Pickler):
    """Writes pickles as Python 2 did for the CIFAR release: protocol 2, byte strings and
    ASCII text as Python 2 ``str`` (BINSTRING opcodes, raw bytes), numpy arrays through
    ``numpy.core.multiarray._reconstruct``. Python 3 would store bytes as latin-1 text instead."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_py2_str(self, obj):
        data = obj if isinstance(obj, bytes) else obj.encode("ascii")
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[bytes] = save_py2_str
    dispatch[str] = save_py2_str


def dump(path, entry):
    buffer = io.BytesIO()
    Py2Pickler(buffer, protocol=2).dump(entry)
    path.write_bytes(buffer.getvalue().replace(b"cnumpy._core.", b"cnumpy.core."))


def write_cifar10(root, rng, per_batch=3, n_test=4):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    images, labels = {}, {}
    for name, n in [(f"data_batch_{i}", per_batch) for i in range(1, 6)] + [("test_batch", n_test)]:
        x, y = random_images(rng, n), rng.integers(0, 10, n).tolist()
        dump(folder / name, {
            b"batch_label": f"{name} of 5".encode(), b"labels": y,
            b"data": x.reshape(n, 3072), b"filenames": [f"img_{i}.png".encode() for i in range(n)],
        })
        images[name], labels[name] = x, y
    dump(folder / "batches.meta", {
        b"num_cases_per_batch": 10000, b"num_vis": 3072,
        b"label_names": [c.encode() for c in CIFAR10_CLASSES],
    })
    return folder, images, labels


def write_tiny_imagenet(root, rng, n_classes=3, train_numbers=(0, 1, 2, 450, 451), val_per_class=2):
    """A ``tiny-imagenet-200/`` tree in the published layout (``wnids.txt`` in the release's
    unsorted order, ``words.txt``, ``train/<wnid>/images/<wnid>_<i>.JPEG`` and
    ``<wnid>_boxes.txt``, ``val/images/val_<j>.JPEG`` with ``val/val_annotations.txt``,
    ``test/images/``), 64×64 JPEGs written by Pillow, the first training image of each class
    greyscale as a few published ones are. Returns ``(folder, wnids)``, wnids sorted."""
    from PIL import Image

    folder = root / "tiny-imagenet-200"
    wnids = [f"n{rng.integers(10**7, 10**8 - 1):08d}" for _ in range(n_classes)]
    (folder / "val" / "images").mkdir(parents=True)
    (folder / "test" / "images").mkdir(parents=True)
    (folder / "wnids.txt").write_text("".join(f"{w}\n" for w in wnids))
    (folder / "words.txt").write_text("".join(f"{w}\tthing {i}, object {i}\n" for i, w in enumerate(wnids)))

    def save(path, grey=False):
        pixels = rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
        image = Image.fromarray(pixels[..., 0] if grey else pixels, "L" if grey else "RGB")
        image.save(path, "JPEG")

    for wnid in wnids:
        images = folder / "train" / wnid / "images"
        images.mkdir(parents=True)
        for k, i in enumerate(train_numbers):
            save(images / f"{wnid}_{i}.JPEG", grey=k == 0)
        (folder / "train" / wnid / f"{wnid}_boxes.txt").write_text(
            "".join(f"{wnid}_{i}.JPEG\t0\t0\t63\t63\n" for i in train_numbers))
    lines = []
    for j in range(n_classes * val_per_class):
        save(folder / "val" / "images" / f"val_{j}.JPEG")
        lines.append(f"val_{j}.JPEG\t{wnids[j % n_classes]}\t1\t2\t60\t61\n")
    (folder / "val" / "val_annotations.txt").write_text("".join(lines))
    save(folder / "test" / "images" / "test_0.JPEG")
    return folder, sorted(wnids)


def write_imagenet(root, rng, wnids=("n01440764", "n01443537", "n15075141"), train_per_class=4, val_per_class=2):
    """An ILSVRC-2012 tree in torchvision's ImageFolder layout, ``root/train/<wnid>/<wnid>_<i>.JPEG``
    and ``root/val/<wnid>/ILSVRC2012_val_<j>.JPEG``, of small JPEGs of varied sizes written by
    Pillow (the first training image of each class greyscale, as a few published ones are).
    Returns ``root``."""
    from PIL import Image

    j = 0
    for split, per_class in (("train", train_per_class), ("val", val_per_class)):
        for wnid in wnids:
            folder = root / split / wnid
            folder.mkdir(parents=True)
            for i in range(per_class):
                j += 1
                w, h = (int(v) for v in rng.integers(40, 90, size=2))
                pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
                grey = split == "train" and i == 0
                image = Image.fromarray(pixels[..., 0] if grey else pixels, "L" if grey else "RGB")
                name = f"{wnid}_{i}.JPEG" if split == "train" else f"ILSVRC2012_val_{j:08d}.JPEG"
                image.save(folder / name, "JPEG")
    return root
#: Words of the tiny text files: each class favours its own words, so a few epochs learn something.
TEXT_WORDS = ("alpha", "beta", "gamma", "delta", "stock", "market", "game", "team", "space", "orbit")


def _sentence(rng, label, n_words=30):
    own = TEXT_WORDS[2 * label % len(TEXT_WORDS): 2 * label % len(TEXT_WORDS) + 2]
    pool = list(own) * 3 + list(TEXT_WORDS)
    return " ".join(rng.choice(pool, size=n_words))


def write_newsgroups(root, rng, groups=("alt.atheism", "comp.graphics", "sci.space"), per_group=8,
                     form="raw"):
    """20 Newsgroups in one of its published forms: ``raw`` (``20_newsgroups/<group>/<number>``,
    the papers' release), ``bydate`` (``20news-bydate-train/`` and ``-test/`` folders) or
    ``archive`` (``20news-bydate.tar.gz`` as scikit-learn caches it). Each message has a header,
    a blank line and a body. Returns the folder to pass as ``root``."""
    import tarfile

    def message(group, k):
        return (f"From: someone{k}@example.org\nSubject: header words never read\nNewsgroups: {group}\n\n"
                f"{_sentence(rng, groups.index(group))}\n").encode("latin-1")

    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for group in groups:
        for k in range(per_group):
            top = "20_newsgroups" if form == "raw" else ("20news-bydate-train" if k % 4 else "20news-bydate-test")
            files[f"{top}/{group}/{10000 + k}"] = message(group, k)
    if form == "archive":
        with tarfile.open(root / "20news-bydate.tar.gz", "w:gz") as archive:
            for name, data in sorted(files.items()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return root
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root / "20_newsgroups" if form == "raw" else root


def write_ag_news(root, rng, n_train=24, n_test=8):
    """``ag_news_csv/train.csv`` and ``test.csv`` as published: quoted, no header, class 1..4,
    title, description (with a comma and a doubled quote inside, as the release has)."""
    folder = root / "ag_news_csv"
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.csv", n_train), ("test.csv", n_test)):
        rows = []
        for k in range(n):
            label = k % 4
            rows.append(f'"{label + 1}","Title, {TEXT_WORDS[2 * label]} ""quoted""","{_sentence(rng, label)}"')
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def write_finsen(root, rng, classes=("Bonds", "Economy", "Stocks"), n_train=18, n_test=6):
    """``finsen/train.csv`` and ``test.csv`` in calibnb's documented schema (``label,text``)."""
    folder = root / "finsen"
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.csv", n_train), ("test.csv", n_test)):
        rows = ["label,text"] + [f'{classes[k % len(classes)]},"{_sentence(rng, k % len(classes))}"' for k in range(n)]
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def write_glove(root, rng, words=TEXT_WORDS[:3], dim=100, name="glove.6B"):
    """``<root>/glove.6B/glove.6B.<dim>d.txt`` as published: a word, then its components, spaces between."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.{dim}d.txt"
    lines = [" ".join([w, *(f"{v:.6f}" for v in rng.normal(size=dim))]) for w in words]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
