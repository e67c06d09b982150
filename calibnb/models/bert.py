"""BERT with one linear layer, AdaFocal's 20 Newsgroups BERT (App. D), through Hugging Face
``transformers`` (the optional extra ``calibnb[text]``).

"We fine-tune a BERT model by adding a single linear classification layer on top of pre-trained
'bert-base-uncased' model (12-layer, 768-hidden, 12-heads, 110M parameters)": the encoder's pooled
output (the [CLS] token through BERT's dense tanh pooler), dropout at the encoder's
``hidden_dropout_prob`` (0.1), and a linear layer to the logits, which is how
``BertForSequenceClassification`` adds its layer. The input is token ids ``(N, L)`` padded with
id 0 (``[PAD]`` in BERT's uncased vocabulary), masked out of attention inside the model, so the
training loop hands it one tensor like any other network.

``config`` (a dict of ``BertConfig`` fields) builds a randomly initialised encoder instead of the
pre-trained one: the tests run BERT end to end that way with a tokenizer from a local vocabulary
file, downloading nothing.
"""

from __future__ import annotations

import torch
from torch import nn

#: The pre-trained encoder of the paper.
PRETRAINED = "bert-base-uncased"
#: The sequence lengths of the paper: training (and validation) and test documents.
TRAIN_LENGTH, TEST_LENGTH = 128, 512


def _transformers():
    try:
        import transformers
    except ImportError as error:
        raise ImportError(
            "the bert model needs Hugging Face transformers, an optional dependency of calibnb: "
            f"pip install 'calibnb[text]' ({error})") from None
    return transformers


class BertClassifier(nn.Module):
    """Token ids ``(N, L)`` (0 = padding) → logits ``(N, num_classes)``."""

    def __init__(self, num_classes: int, *, pretrained: str = PRETRAINED, config: dict | None = None,
                 vocab_file: str | None = None):
        super().__init__()
        transformers = _transformers()
        del vocab_file  # the tokenizer's (bert_tokenizer), named here so that model_params may carry it
        if config is not None:
            if not isinstance(config, dict):
                raise TypeError(f"config must be a dict of BertConfig fields, got {config!r}")
            self.encoder = transformers.BertModel(transformers.BertConfig(**config))
        else:
            self.encoder = transformers.BertModel.from_pretrained(pretrained)
        hidden = self.encoder.config.hidden_size
        self.dropout = nn.Dropout(self.encoder.config.hidden_dropout_prob)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != 0).long()
        pooled = self.encoder(input_ids=ids, attention_mask=mask).pooler_output
        return self.classifier(self.dropout(pooled))


def bert_tokenizer(pretrained: str = PRETRAINED, vocab_file: str | None = None):
    """BERT's WordPiece tokenizer: from a local ``vocab.txt`` when given (lower-casing, as the
    uncased model's), else the pre-trained model's."""
    transformers = _transformers()
    if vocab_file is not None:
        # BERT's vocab.txt: one WordPiece a line, its id the line's number from 0
        with open(vocab_file, encoding="utf-8") as f:
            pieces = [line.rstrip("\n") for line in f]
        if len(set(pieces)) != len(pieces) or "" in pieces:
            raise ValueError(f"{vocab_file}: a BERT vocabulary lists each WordPiece once, one a line")
        tokenizer = transformers.BertTokenizer(vocab={p: i for i, p in enumerate(pieces)}, do_lower_case=True)
    else:
        tokenizer = transformers.BertTokenizer.from_pretrained(pretrained)
    if tokenizer.pad_token_id != 0:
        raise ValueError(f"the BERT vocabulary pads with id {tokenizer.pad_token_id}; calibnb's model masks id 0")
    return tokenizer


def encode_for_bert(tokenizer, texts: list[str], length: int):
    """``(N, length)`` int64 ids of ``texts``: [CLS] words [SEP], truncated, padded with 0 after."""
    import numpy as np

    encoded = tokenizer(list(texts), truncation=True, max_length=length, padding="max_length")
    return np.asarray(encoded["input_ids"], dtype=np.int64)
