"""BERT (AdaFocal's 20 Newsgroups BERT row) without downloading anything: a tiny randomly
initialised ``BertConfig`` and a WordPiece tokenizer from a local vocabulary file, through the
model alone and through the training notebook end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="the optional extra calibnb[text]")  # requirements-test.txt installs it

from data_files import TEXT_WORDS, write_newsgroups  # noqa: E402
from train_runs import run_train_notebook  # noqa: E402

from calibnb.models import get_model  # noqa: E402
from calibnb.models.bert import bert_tokenizer, encode_for_bert  # noqa: E402
from calibnb.runs import load_logits  # noqa: E402

TINY = {"vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 512}


def write_vocab(path):
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TEXT_WORDS, "from", "header"]) + "\n")
    return path


def test_the_tokenizer_pads_with_0_after_and_the_model_masks_the_padding(tmp_path):
    tokenizer = bert_tokenizer(vocab_file=write_vocab(tmp_path / "vocab.txt"))
    ids = encode_for_bert(tokenizer, ["Alpha beta", "gamma unknownword " * 20], 8)
    np.testing.assert_array_equal(ids[0], [2, 5, 6, 3, 0, 0, 0, 0])  # [CLS] alpha beta [SEP], padding
    assert ids[1, 0] == 2 and ids[1, -1] == 3 and 1 in ids[1]  # truncated to 8, [UNK] for the unknown
    torch.manual_seed(0)
    model = get_model("bert", 3, config=TINY).eval()
    short = torch.tensor([[2, 5, 6, 3]])
    padded = torch.tensor([[2, 5, 6, 3, 0, 0, 0, 0]])
    torch.testing.assert_close(model(short), model(padded))  # the padding changes nothing
    head = sum(p.numel() for p in model.classifier.parameters())
    assert head == 16 * 3 + 3  # one linear layer on the pooled output


@pytest.mark.slow
def test_the_papers_bert_run_executes_end_to_end(tmp_path):
    write_newsgroups(tmp_path / "data", np.random.default_rng(0), per_group=20)
    vocab = write_vocab(tmp_path / "vocab.txt")
    out = tmp_path / "run"
    params = {"dataset": "20newsgroups", "data_root": str(tmp_path / "data"), "verify_data": False,
              "model": "bert", "model_params": {"config": TINY, "vocab_file": str(vocab)},
              "recipe": "ghosh2022_bert", "epochs": 2, "val_size": 3, "loss": "adafocal", "progress": False}
    run_train_notebook(params, out, cwd=tmp_path)
    metrics = json.loads((out / "metrics.json").read_text())
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 3 and metrics["selected_epoch"] in (1, 2)
    # 45 training messages, batch 32: 2 steps an epoch, 4 in all, warm-up round(0.2 * 2) -> 1 step;
    # the rate after epoch 1 (2 steps) is 2e-5 * (4 - 2) / (4 - 1)
    assert float(history[1].split(",")[1]) == pytest.approx(2e-5 * 2 / 3)
    val_logits, _ = load_logits(out / "logits_val.npz")
    test_logits, _ = load_logits(out / "logits_test.npz")
    assert val_logits.shape == (3, 3) and test_logits.shape == (12, 3)
    assert set(metrics["test"]) == {"pre", "ts", "fts"}


def test_the_warm_up_schedule_is_hugging_faces_linear_schedule():
    from transformers import get_linear_schedule_with_warmup

    from calibnb.train.loop import LinearWarmupDecay

    ours = LinearWarmupDecay(steps_per_epoch=472, warmup=0.2, epochs=10)  # AdaFocal's 472 batches
    assert ours.warm == 94 and ours.total == 4720
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=2e-5)
    theirs = get_linear_schedule_with_warmup(optimizer, 94, 4720).lr_lambdas[0]
    for step in (0, 1, 50, 93, 94, 95, 2000, 4719, 4720, 5000):
        assert ours(step) == pytest.approx(theirs(step), abs=1e-12), step
