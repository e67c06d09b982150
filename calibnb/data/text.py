"""The papers' text data sets as token ids: 20 Newsgroups, AG News and FinSen.

Tokenisation is the one of the code the papers' 20 Newsgroups runs adapt (AdaFocal App. D:
"implemented in PyTorch by adapting the TensorFlow code" of Kumar et al.'s MMCE, ``20ng_mmce.py``,
itself the Keras example of pre-trained GloVe embeddings), written here without Keras:

1. a document is lower-cased, each of :data:`FILTERS` becomes a space, and it is split on spaces
   (Keras's ``text_to_word_sequence``);
2. words are numbered by their count over *all* documents of the data set, most frequent first,
   ties in order of first appearance, from 1 (0 is the padding); only the :data:`MAX_WORDS` − 1
   most frequent are kept, the others are dropped from the documents (Keras's ``Tokenizer(num_words=
   20000)``, fitted on every document before the split, as that code does);
3. a document becomes its last ``length`` ids, zeros in front when shorter (``pad_sequences``:
   padding and truncation at the front).

20 Newsgroups (:func:`read_20newsgroups`): the original release ``20_newsgroups/`` (``news20.tar.gz``,
19,997 messages in 20 group folders), which gives AdaFocal's 15,098/900/3,999 split: the messages
are shuffled (seed :data:`SPLIT_SEED`; the code's shuffle is unseeded), the last 20 % (3,999) are
the test set and the 900 before them the validation set. A message's header (up to its first blank
line) is dropped, as the code does. The "bydate" release as scikit-learn's
``fetch_20newsgroups`` caches it (``20news-bydate.tar.gz``, or its ``20news-bydate-train`` and
``-test`` folders; 18,846 messages with duplicates removed) is read the same way and split by the
same rule (3,769 test, and 848 validation: the papers' 900 of 19,997 as a fraction); the papers
did not use it.

AG News (:func:`read_ag_news`): the published ``ag_news_csv/`` (``train.csv``, 120,000 rows;
``test.csv``, 7,600; ``classes.txt``): quoted CSV without header, ``class`` (1..4), ``title``,
``description``; a document is the title, a space and the description.

FinSen: no release format could be identified from the FCL paper or its authors' code, so calibnb
reads a documented schema (:func:`read_finsen`): ``finsen/train.csv`` and ``finsen/test.csv``,
UTF-8 CSV with a header row naming the columns ``label`` (the class name) and ``text``.

Nothing in a file is executed: archives are read member by member without extracting, CSVs are
parsed by the csv module, and every damaged file is named in the error.
"""

from __future__ import annotations

import csv
import hashlib
import re
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np

from .readers import reading

#: Characters Keras's ``Tokenizer`` replaces by a space before splitting.
FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
#: The tokenizer's ``num_words``: ids 1 .. MAX_WORDS - 1 are kept (0 pads).
MAX_WORDS = 20000
#: The 20 Newsgroups code's ``MAX_SEQUENCE_LENGTH``; AG News and FinSen documents are padded to
#: their data set's longest document, at most this.
MAX_LENGTH = 1000
#: The shortest input the global-pooling CNN takes (three width-5 convolutions, two width-5 pools).
MIN_LENGTH = 21
#: The shuffle of 20 Newsgroups before its split (the papers' code does not seed it).
SPLIT_SEED = 0
#: 20 Newsgroups' validation set (AdaFocal App. D) and the test fraction of the code.
NEWSGROUPS_VAL, NEWSGROUPS_TEST_FRACTION = 900, 0.2
#: Published sizes that ``verify=True`` requires.
NEWSGROUPS_RAW_COUNT = 19997
NEWSGROUPS_BYDATE_COUNT = 18846
AG_NEWS_COUNTS = {"train.csv": 120000, "test.csv": 7600}
AG_NEWS_CLASSES = ("World", "Sports", "Business", "Sci/Tech")
#: scikit-learn's record of the bydate archive (``sklearn.datasets._twenty_newsgroups.ARCHIVE``).
BYDATE_ARCHIVE = "20news-bydate.tar.gz"
BYDATE_SHA256 = "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610"

_TABLE = str.maketrans({c: " " for c in FILTERS})
_GROUP = re.compile(r"[a-z0-9]+(\.[a-z0-9]+)+")


def words(text: str) -> list[str]:
    """Keras's ``text_to_word_sequence``: lower-case, :data:`FILTERS` to spaces, split on spaces."""
    return [w for w in text.lower().translate(_TABLE).split(" ") if w]


def vocabulary_of(documents: list[list[str]], max_words: int = MAX_WORDS) -> tuple[str, ...]:
    """The kept words by id: ``vocabulary[0]`` is ``""`` (padding), then the ``max_words - 1``
    most frequent words, ties in order of first appearance (Keras's ``word_index``)."""
    counts = Counter()
    for doc in documents:
        counts.update(doc)
    # Counter keeps first-insertion order; sorted() is stable, so ties stay in that order
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return ("", *(word for word, _ in ranked[: max_words - 1]))


def encode(documents: list[list[str]], vocabulary: tuple[str, ...], length: int) -> np.ndarray:
    """``(N, length)`` int64 ids: words outside ``vocabulary`` dropped, each document's last
    ``length`` ids, zeros in front (Keras's ``texts_to_sequences`` then ``pad_sequences``)."""
    index = {word: i for i, word in enumerate(vocabulary) if i}
    out = np.zeros((len(documents), length), dtype=np.int64)
    for row, doc in enumerate(documents):
        ids = [index[w] for w in doc if w in index][-length:]
        if ids:
            out[row, length - len(ids):] = ids
    return out


def tokenize(texts: list[str], length: int | None = None):
    """Every document of a data set as ids: ``(ids, vocabulary)``, ``length`` = the longest
    document (at most :data:`MAX_LENGTH`, at least :data:`MIN_LENGTH`) when None."""
    documents = [words(t) for t in texts]
    vocabulary = vocabulary_of(documents)
    if length is None:
        kept = set(vocabulary[1:])
        longest = max((sum(w in kept for w in d) for d in documents), default=0)
        length = min(MAX_LENGTH, max(MIN_LENGTH, longest))
    return encode(documents, vocabulary, length), vocabulary


def strip_header(message: str) -> str:
    """A newsgroup message from its first blank line on (the header dropped), as the code does."""
    cut = message.find("\n\n")
    return message[cut:] if cut > 0 else message


def _messages_in_folders(folders: list[Path]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for top in folders:
        for group in sorted(p for p in top.iterdir() if p.is_dir() and _GROUP.fullmatch(p.name)):
            files = sorted((f for f in group.iterdir() if f.name.isdigit()), key=lambda f: f.name)
            texts = groups.setdefault(group.name, [])
            for f in files:
                with reading(f, "a newsgroup message"):
                    texts.append(f.read_bytes().decode("latin-1"))
    return groups


def _messages_in_archive(path: Path) -> dict[str, list[str]]:
    """The bydate archive read member by member (nothing extracted, links and devices refused)."""
    groups: dict[str, list[str]] = {}
    with reading(path, "the 20 Newsgroups bydate archive (a .tar.gz)"):
        with tarfile.open(path, "r:gz") as archive:
            members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
            for member in members:
                parts = Path(member.name).parts
                if len(parts) != 3 or not parts[2].isdigit() or not _GROUP.fullmatch(parts[1]):
                    continue
                data = archive.extractfile(member).read()
                groups.setdefault(parts[1], []).append(data.decode("latin-1"))
    return groups


def sha256sum(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_20newsgroups(folder: Path, verify: bool = True):
    """20 Newsgroups as ids, split as the papers' code splits it.

    ``folder`` holds the original release's group folders (``20_newsgroups/``), or the bydate
    release's ``20news-bydate-train/`` and ``-test/`` folders, or its archive
    :data:`BYDATE_ARCHIVE` (checked against scikit-learn's sha256 with ``verify=True``).
    Returns ``(x_train, y_train, x_test, y_test, groups, val_idx, vocabulary, texts)``:
    ``x_train`` holds the training and validation messages, ``val_idx`` the validation ones'
    positions, ``texts`` the ``(train, test)`` documents as read (BERT tokenises them itself).
    """
    folder = Path(folder)
    bydate = [folder / "20news-bydate-train", folder / "20news-bydate-test"]
    if all(p.is_dir() for p in bydate):
        groups, expected = _messages_in_folders(bydate), NEWSGROUPS_BYDATE_COUNT
    elif (folder / BYDATE_ARCHIVE).is_file():
        archive = folder / BYDATE_ARCHIVE
        if verify and sha256sum(archive) != BYDATE_SHA256:
            raise ValueError(f"{archive}: sha256 differs from the published archive's ({BYDATE_SHA256}); "
                             "the file is damaged or another one (pass verify=False for a copy of your own)")
        groups, expected = _messages_in_archive(archive), NEWSGROUPS_BYDATE_COUNT
    else:
        groups, expected = _messages_in_folders([folder]), NEWSGROUPS_RAW_COUNT
    names = tuple(sorted(g for g, texts in groups.items() if texts))
    if len(names) < 2:
        raise ValueError(f"{folder}: found {len(names)} newsgroup folder(s) with messages; 20 Newsgroups has 20")
    texts, labels = [], []
    for label, name in enumerate(names):
        texts += [strip_header(t) for t in groups[name]]
        labels += [label] * len(groups[name])
    if verify and (len(names) != 20 or len(texts) != expected):
        raise ValueError(f"{folder}: {len(names)} groups and {len(texts)} messages; the published release has 20 "
                         f"and {expected} (pass verify=False for a subset)")
    ids, vocabulary = tokenize(texts, MAX_LENGTH)
    labels = np.asarray(labels, dtype=np.int64)
    train, test, val_idx = newsgroups_split(len(texts))
    texts = ([texts[i] for i in train], [texts[i] for i in test])
    return ids[train], labels[train], ids[test], labels[test], names, val_idx, vocabulary, texts


def newsgroups_split(n: int, seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The papers' split of ``n`` messages: ``(train, test, val_idx)``, where ``train`` and
    ``test`` are message numbers (shuffled with ``seed``; the last 20 % are the test set) and
    ``val_idx`` the positions in ``train`` of the validation messages (the last 900 of the
    release's 19,997 before the test set, the same fraction of another copy): 15,098/900/3,999."""
    order = np.random.RandomState(seed).permutation(n)
    n_test = int(NEWSGROUPS_TEST_FRACTION * n)
    # 900 of the release's 19,997 (AdaFocal App. D); the same fraction of another copy
    n_val = round(NEWSGROUPS_VAL * n / NEWSGROUPS_RAW_COUNT)
    if n_test < 1 or n_val < 1 or n - n_test - n_val < 1:
        raise ValueError(f"20 Newsgroups: {n} messages are too few for a train/validation/test split")
    train, test = order[: n - n_test], order[n - n_test:]
    return train, test, np.arange(len(train) - n_val, len(train), dtype=np.int64)


def _csv_rows(path: Path, what: str, header: bool) -> list[list[str]]:
    with reading(path, what):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, strict=True))
    return rows[1:] if header else rows


def read_ag_news(folder: Path, verify: bool = True):
    """AG News (Zhang et al. 2015) from ``train.csv`` and ``test.csv``: ``(x_train, y_train,
    x_test, y_test, classes, None, vocabulary)``, labels 0..3 = classes 1..4."""
    folder = Path(folder)
    parts = []
    for name in ("train.csv", "test.csv"):
        path = folder / name
        rows = _csv_rows(path, "AG News CSV (class, title, description)", header=False)
        labels, texts = [], []
        for number, row in enumerate(rows, 1):
            if len(row) != 3 or row[0] not in ("1", "2", "3", "4"):
                raise ValueError(f"{path}, row {number}: expected class 1..4, title, description; got {row[:3]!r}")
            labels.append(int(row[0]) - 1)
            texts.append(f"{row[1]} {row[2]}")
        if not rows:
            raise ValueError(f"{path} holds no row")
        if verify and len(rows) != AG_NEWS_COUNTS[name]:
            raise ValueError(f"{path} holds {len(rows)} rows; the published AG News has {AG_NEWS_COUNTS[name]} "
                             "(pass verify=False for a subset)")
        parts.append((texts, np.asarray(labels, dtype=np.int64)))
    return _split_text_pair(parts, AG_NEWS_CLASSES)


def read_finsen(folder: Path, verify: bool = True):
    """FinSen in calibnb's documented schema (module docstring): ``train.csv`` and ``test.csv``
    with a ``label,text`` header; classes are the sorted label names of both files."""
    del verify  # no published release to check against
    folder = Path(folder)
    raw = []
    for name in ("train.csv", "test.csv"):
        path = folder / name
        with reading(path, "a FinSen CSV with a label,text header"):
            with open(path, encoding="utf-8", newline="") as f:
                rows = list(csv.reader(f, strict=True))
        if not rows or [c.strip() for c in rows[0]] != ["label", "text"]:
            raise ValueError(f"{path}: the first row must be the header label,text, got {rows[0] if rows else 'nothing'!r}")
        for number, row in enumerate(rows[1:], 2):
            if len(row) != 2 or not row[0].strip():
                raise ValueError(f"{path}, row {number}: expected a label and a text, got {row!r}")
        if len(rows) < 2:
            raise ValueError(f"{path} holds no row")
        raw.append(rows[1:])
    classes = tuple(sorted({row[0].strip() for rows in raw for row in rows}))
    index = {c: i for i, c in enumerate(classes)}
    parts = [([r[1] for r in rows], np.asarray([index[r[0].strip()] for r in rows], dtype=np.int64))
             for rows in raw]
    return _split_text_pair(parts, classes)


def _split_text_pair(parts, classes):
    (train_texts, y_train), (test_texts, y_test) = parts
    ids, vocabulary = tokenize(train_texts + test_texts)
    n = len(train_texts)
    return ids[:n], y_train, ids[n:], y_test, classes, None, vocabulary, (train_texts, test_texts)
