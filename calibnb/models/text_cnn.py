"""The global-pooling CNN of the papers' 20 Newsgroups, AG News and FinSen runs.

AdaFocal (App. D), DFL (§6) and FCL (§5) train "the Global Pooling CNN Network" (Lin et al.
2014, *Network in Network*, whose global pooling replaces the flattening classifier) as the code
they adapt builds it (Kumar et al.'s MMCE, ``20ng_mmce.py``):

- a frozen embedding of the vocabulary (GloVe, 100 dimensions; 20,000 ids, 0 the padding);
- three convolutions of 128 filters of width 5 (valid padding) with ReLU, the first two each
  followed by a max pool of width 5 and *stride 1*;
- the maximum over time (global max pooling) of the last one's 128 channels;
- a 128-unit ReLU layer, dropout 0.3 (``keep_prob`` 0.7 in training), and the linear layer to
  the classes' logits (the code's softmax is the loss's).

Trainable parameters with 20 classes: 64,128 + 82,048 + 82,048 (convolutions) + 16,512 + 2,580
(dense) = 247,316; the embedding's 2,000,000 are frozen.
"""

from __future__ import annotations

import torch
from torch import nn


class GlobalPoolingCNN(nn.Module):
    """Token ids ``(N, L)`` int64 → logits ``(N, num_classes)``.

    Parameters
    ----------
    num_classes : number of classes.
    embeddings : ``(vocab_size, embedding_dim)`` initial vectors (GloVe); None starts from zeros
        of ``vocab_size`` × ``embedding_dim`` (the weights a trained checkpoint then fills in).
    freeze : keep the embedding fixed, as the papers' code does.
    """

    def __init__(self, num_classes: int, *, embeddings=None, vocab_size: int = 20000, embedding_dim: int = 100,
                 freeze: bool = True, channels: int = 128, width: int = 5, pool: int = 5, hidden: int = 128,
                 dropout: float = 0.3):
        super().__init__()
        if embeddings is not None:
            embeddings = torch.as_tensor(embeddings, dtype=torch.float32)
            if embeddings.ndim != 2:
                raise ValueError(f"embeddings must be (vocab_size, embedding_dim), got shape {tuple(embeddings.shape)}")
            vocab_size, embedding_dim = embeddings.shape
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        with torch.no_grad():
            self.embedding.weight.copy_(embeddings if embeddings is not None else torch.zeros(vocab_size, embedding_dim))
        self.embedding.weight.requires_grad_(not freeze)
        self.features = nn.Sequential(
            nn.Conv1d(embedding_dim, channels, width), nn.ReLU(), nn.MaxPool1d(pool, stride=1),
            nn.Conv1d(channels, channels, width), nn.ReLU(), nn.MaxPool1d(pool, stride=1),
            nn.Conv1d(channels, channels, width), nn.ReLU(),
        )
        self.classifier = nn.Sequential(nn.Linear(channels, hidden), nn.ReLU(), nn.Dropout(dropout),
                                        nn.Linear(hidden, num_classes))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids).transpose(1, 2)  # (N, D, L)
        return self.classifier(self.features(x).amax(dim=2))


def global_pooling_cnn(num_classes: int, **kwargs) -> GlobalPoolingCNN:
    """:class:`GlobalPoolingCNN` with the papers' sizes (keyword arguments override them)."""
    return GlobalPoolingCNN(num_classes, **kwargs)
