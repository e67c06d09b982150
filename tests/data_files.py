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
