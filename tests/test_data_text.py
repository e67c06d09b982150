"""The text data sets and GloVe, read from tiny files in their published formats
(``tests/data_files.py``): the Keras tokenisation the papers' code uses, the 20 Newsgroups split,
every form of each release, and a clear error naming the file for each kind of damage."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
import torch
from data_files import write_ag_news, write_finsen, write_glove, write_newsgroups

from calibnb.data import find_glove, load_dataset
from calibnb.data import text
from calibnb.data.glove import embedding_matrix, read_glove


def test_words_follow_keras_text_to_word_sequence():
    # lower-cased, the filter characters become spaces; apostrophes and \r are not filtered
    assert text.words("Hello, World!\tIt's a-test\n(x)") == ["hello", "world", "it's", "a", "test", "x"]
    assert text.words("") == [] and text.words(" ,.; ") == []


def test_vocabulary_ranks_by_count_then_first_appearance_and_keeps_max_words_minus_one():
    docs = [["b", "a", "c"], ["a", "d", "c"], ["e"]]
    assert text.vocabulary_of(docs) == ("", "a", "c", "b", "d", "e")  # a, c twice; b, d, e in order seen
    assert text.vocabulary_of(docs, max_words=3) == ("", "a", "c")


def test_encode_drops_unknown_words_and_pads_and_truncates_at_the_front():
    vocabulary = ("", "a", "b", "c")
    ids = text.encode([["a", "x", "b"], ["a", "b", "c", "a", "b"]], vocabulary, length=4)
    np.testing.assert_array_equal(ids, [[0, 0, 1, 2], [2, 3, 1, 2]])  # pad_sequences: 'pre', 'pre'
    assert ids.dtype == np.int64


def test_the_papers_split_of_the_20_newsgroups_release_is_15098_900_3999():
    train, test, val_idx = text.newsgroups_split(19997)
    assert (len(train) - len(val_idx), len(val_idx), len(test)) == (15098, 900, 3999)
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(19997))
    np.testing.assert_array_equal(val_idx, np.arange(15098, 15998))  # the 900 just before the test set
    train_b, test_b, val_b = text.newsgroups_split(18846)  # bydate: the same rule
    assert (len(val_b), len(test_b)) == (848, 3769)
    with pytest.raises(ValueError, match="too few"):
        text.newsgroups_split(4)


@pytest.mark.parametrize("form", ["raw", "bydate", "archive"])
def test_20_newsgroups_reads_every_published_form_alike(tmp_path, form):
    root = write_newsgroups(tmp_path, np.random.default_rng(0), per_group=20, form=form)
    ds = load_dataset("20newsgroups", root=root, verify=False)
    assert ds.classes == ("alt.atheism", "comp.graphics", "sci.space") and ds.num_classes == 3
    assert ds.x_train.shape == (48, 1000) and ds.x_test.shape == (12, 1000) and ds.x_train.dtype == torch.int64
    assert len(ds.val_idx) == 3 and ds.mean == () and ds.vocabulary[0] == ""
    # the header (up to the first blank line) is dropped: its words never become tokens
    assert "subject" not in ds.vocabulary and "header" not in ds.vocabulary
    assert sorted(np.bincount(np.concatenate([ds.y_train, ds.y_test]))) == [20, 20, 20]
    assert int(ds.x_train.max()) < len(ds.vocabulary)


def test_20_newsgroups_verify_requires_the_published_counts(tmp_path):
    root = write_newsgroups(tmp_path, np.random.default_rng(0), per_group=20)
    with pytest.raises(ValueError, match="3 groups and 60 messages; the published release has 20 and 19997"):
        load_dataset("20newsgroups", root=root)


def test_the_bydate_archive_is_checked_against_scikit_learns_sha256_and_never_extracted(tmp_path):
    root = write_newsgroups(tmp_path, np.random.default_rng(0), per_group=20, form="archive")
    with pytest.raises(ValueError, match=r"20news-bydate\.tar\.gz: sha256 differs"):
        load_dataset("20newsgroups", root=root)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "20news-bydate.tar.gz").write_bytes(b"not a gzip file")
    with pytest.raises(ValueError, match=r"damaged/20news-bydate\.tar\.gz is not the 20 Newsgroups bydate"):
        load_dataset("20newsgroups", root=damaged, verify=False)
    # a link or a path outside the archive's layout is not read, let alone extracted
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    with tarfile.open(hostile / "20news-bydate.tar.gz", "w:gz") as archive:
        for name in ("20news-bydate-train/sci.space/1", "20news-bydate-train/comp.graphics/2",
                     "20news-bydate-train/../../evil/3"):
            data = b"H: x\n\nbody words here\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("20news-bydate-train/sci.space/4")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    groups = text._messages_in_archive(hostile / "20news-bydate.tar.gz")
    assert {g: len(m) for g, m in groups.items()} == {"comp.graphics": 1, "sci.space": 1}
    assert not (tmp_path / "evil").exists()


def test_ag_news_reads_the_published_csvs(tmp_path):
    write_ag_news(tmp_path, np.random.default_rng(0), n_train=24, n_test=8)
    ds = load_dataset("ag_news", root=tmp_path, verify=False)
    assert ds.classes == ("World", "Sports", "Business", "Sci/Tech") and ds.val_idx is None
    assert ds.y_train.tolist() == [k % 4 for k in range(24)] and len(ds.y_test) == 8
    assert "quoted" in ds.vocabulary and "title" in ds.vocabulary  # the title is part of the text
    assert text.MIN_LENGTH <= ds.x_train.shape[1] <= text.MAX_LENGTH
    with pytest.raises(ValueError, match="train.csv holds 24 rows; the published AG News has 120000"):
        load_dataset("ag_news", root=tmp_path)


def test_damaged_csv_rows_are_named_with_their_file_and_row(tmp_path):
    folder = write_ag_news(tmp_path, np.random.default_rng(0))
    (folder / "test.csv").write_text('"1","a","b"\n"7","bad class","x"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"test\.csv, row 2: expected class 1\.\.4"):
        load_dataset("ag_news", root=tmp_path, verify=False)
    (folder / "test.csv").write_bytes(b'"1","\xff\xfe","b"\n')
    with pytest.raises(ValueError, match=r"test\.csv is not AG News CSV"):
        load_dataset("ag_news", root=tmp_path, verify=False)


def test_finsen_reads_the_documented_schema(tmp_path):
    folder = write_finsen(tmp_path, np.random.default_rng(0))
    ds = load_dataset("finsen", root=tmp_path)
    assert ds.classes == ("Bonds", "Economy", "Stocks") and len(ds.y_train) == 18 and len(ds.y_test) == 6
    (folder / "train.csv").write_text("class,body\nStocks,up\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train\.csv: the first row must be the header label,text"):
        load_dataset("finsen", root=tmp_path)
    (folder / "train.csv").write_text("label,text\nStocks\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train\.csv, row 2: expected a label and a text"):
        load_dataset("finsen", root=tmp_path)


def test_glove_builds_the_vocabularys_matrix_with_zeros_for_padding_and_unknown_words(tmp_path):
    rng = np.random.default_rng(0)
    path = write_glove(tmp_path, rng, words=("the", "cat", "sat"), dim=100)
    assert find_glove(tmp_path) == path
    words, vectors = read_glove(path, verify=False)
    assert words == ["the", "cat", "sat"] and vectors.shape == (3, 100) and vectors.dtype == np.float32
    matrix = embedding_matrix(("", "sat", "dog", "the"), path, verify=False)
    np.testing.assert_array_equal(matrix[0], 0)
    np.testing.assert_array_equal(matrix[2], 0)
    np.testing.assert_allclose(matrix[1], vectors[2])
    np.testing.assert_allclose(matrix[3], vectors[0])
    with pytest.raises(ValueError, match="holds 3 words; the published glove.6B has 400000"):
        read_glove(path)


@pytest.mark.parametrize("line, message", [
    ("dog 1.0 2.0", r"line|components|not finite"),  # too few components
    ("dog " + " ".join(["1.0"] * 101), r"glove\.6B\.100d\.txt is not a GloVe file"),  # too many
    ("dog " + " ".join(["1.0"] * 99 + ["x1"]), r"line 4: component 100 is 'x1', not a number"),
    ("the " + " ".join(["1.0"] * 100), r"line 4: 'the' is listed twice"),
    ("dog " + " ".join(["1.0"] * 99 + ["inf"]), r"line 4: a component is not finite"),
])
def test_a_damaged_glove_file_is_refused_naming_file_and_line(tmp_path, line, message):
    path = write_glove(tmp_path, np.random.default_rng(0), words=("the", "cat", "sat"))
    path.write_text(path.read_text() + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        read_glove(path, verify=False)
    assert str(path) in str(error.value)


def test_glove_names_and_missing_files_are_explained(tmp_path):
    with pytest.raises(ValueError, match="not a published GloVe file name"):
        read_glove(tmp_path / "vectors.txt")
    with pytest.raises(FileNotFoundError, match=r"(?s)glove\.6B\.100d\.txt.*nlp\.stanford\.edu"):
        find_glove(tmp_path / "nowhere")


def test_a_replaced_message_is_read_again_and_other_data_beside_is_never_walked(tmp_path):
    """The per-process cache is keyed on the messages' sizes and times only: an edited message is
    seen, and a data folder's other data sets (Tiny-ImageNet's 110,000 files) are not listed."""
    root = write_newsgroups(tmp_path / "data", np.random.default_rng(0), per_group=20)
    other = tmp_path / "data" / "other" / "deep"
    other.mkdir(parents=True)
    (other / "x.bin").write_bytes(b"0")
    from calibnb.data.datasets import _stamp_newsgroups

    stamp = _stamp_newsgroups(root)
    assert len(stamp) == 60 and not any("other" in entry[0] for entry in stamp)
    before = load_dataset("20newsgroups", root=root, verify=False)
    message = sorted((root / "sci.space").iterdir())[0]
    message.write_text("H: x\n\nzeta zeta zeta zeta\n", encoding="latin-1")
    after = load_dataset("20newsgroups", root=root, verify=False)
    assert "zeta" in after.vocabulary and "zeta" not in before.vocabulary
