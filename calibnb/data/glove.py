"""GloVe word vectors (Pennington et al. 2014) as published: ``glove.6B.100d.txt`` and kin.

A file is text, one word a line followed by its vector's components, separated by single
spaces. The papers' global-pooling CNN embeds 20 Newsgroups (AdaFocal App. D, FCL §5: "Glove word
embedding (glove.6B.100d)") with the 100-dimensional vectors of ``glove.6B.zip``
(https://nlp.stanford.edu/data/glove.6B.zip, 822 MB; ``glove.6B.100d.txt`` 347 MB, 400,000
words), frozen, a word missing from GloVe (and the padding id 0) embedded as zeros, as the code
does (``20ng_mmce.py``: an all-zero row for a word not in the index, a non-trainable embedding).

Stanford publishes no checksum, so the file is checked instead: every line has the same number of
components (the ``<d>d`` of its name), each parses as a finite number, no word is listed twice;
``verify=True`` also requires the published count of words (:data:`WORDS`). The file is parsed
by pandas' C reader (nothing in it is evaluated); an error names the file and the line.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np

#: Words in each published collection, what ``verify=True`` requires.
WORDS = {"6B": 400000, "42B": 1917494, "840B": 2196017, "twitter.27B": 1193514}
#: The papers' vectors.
DEFAULT = "glove.6B.100d"
SOURCE = "https://nlp.stanford.edu/data/glove.6B.zip (822 MB; extract glove.6B.100d.txt)"

_NAME = re.compile(r"glove\.(6B|42B|840B|twitter\.27B)\.(\d+)d")


def dimension_of(path: Path) -> tuple[str, int]:
    """``(collection, dimension)`` from a published file name, ``glove.6B.100d.txt`` → ``("6B", 100)``."""
    match = _NAME.fullmatch(Path(path).name.removesuffix(".txt"))
    if match is None:
        raise ValueError(f"{path}: not a published GloVe file name (glove.<collection>.<d>d.txt, e.g. "
                         "glove.6B.100d.txt)")
    return match.group(1), int(match.group(2))


def read_glove(path: str | os.PathLike, verify: bool = True) -> tuple[list[str], np.ndarray]:
    """Every word of the GloVe file ``path`` and its vector: ``(words, (n, d) float32)``."""
    import pandas as pd

    path = Path(path)
    collection, dim = dimension_of(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such GloVe file; get it from {SOURCE}")
    try:
        table = pd.read_csv(path, sep=" ", header=None, quoting=csv.QUOTE_NONE, encoding="utf-8",
                            keep_default_na=False, na_values=[], dtype={0: str}, engine="c")
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path} is not a GloVe file of {dim}-dimensional vectors: {reason}") from None
    if table.shape[1] != dim + 1:
        raise ValueError(f"{path}: lines hold {table.shape[1] - 1} components; its name says {dim}")
    values = table.iloc[:, 1:]
    bad = [c for c in values.columns if values[c].dtype.kind != "f" and values[c].dtype.kind != "i"]
    if bad:
        column = values[bad[0]]
        line = int(np.flatnonzero(pd.to_numeric(column, errors="coerce").isna().to_numpy())[0]) + 1
        raise ValueError(f"{path}, line {line}: component {bad[0]} is {column.iloc[line - 1]!r}, not a number")
    vectors = values.to_numpy(dtype=np.float32)
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        raise ValueError(f"{path}, line {int(np.flatnonzero(~finite)[0]) + 1}: a component is not finite")
    words = table.iloc[:, 0].tolist()
    seen = set()
    for line, word in enumerate(words, 1):
        if word in seen:
            raise ValueError(f"{path}, line {line}: {word!r} is listed twice")
        seen.add(word)
    if verify and len(words) != WORDS[collection]:
        raise ValueError(f"{path} holds {len(words)} words; the published glove.{collection} has "
                         f"{WORDS[collection]} (pass verify=False for a copy of your own)")
    return words, vectors


def embedding_matrix(vocabulary: tuple[str, ...], path: str | os.PathLike, verify: bool = True) -> np.ndarray:
    """``(len(vocabulary), d)`` float32: row ``i`` the GloVe vector of ``vocabulary[i]``, zeros
    for the padding id 0 and for words GloVe does not list (as the papers' code builds it)."""
    words, vectors = read_glove(path, verify)
    index = {w: i for i, w in enumerate(words)}
    out = np.zeros((len(vocabulary), vectors.shape[1]), dtype=np.float32)
    for i, word in enumerate(vocabulary):
        if i and word in index:
            out[i] = vectors[index[word]]
    return out
