"""Training: :func:`train` runs one configuration; recipes hold the papers' optimisation setups.

::

    from calibnb.train import train
    result = train({"dataset": "fashion-mnist", "model": "small_cnn", "loss": "focal_loss",
                    "gamma": 3, "epochs": 2, "out_dir": "runs/demo"})
    result["test"]["pre"]["ece"], result["temperature"]
"""

from .config import TrainConfig
from .evaluate import evaluate_logits, fit_calibrators
from .host_reads import count_host_reads
from .loop import Trainer, predict_logits, train, train_step
from .recipes import RECIPES, Recipe

__all__ = [
    "RECIPES", "Recipe", "TrainConfig", "Trainer", "count_host_reads", "evaluate_logits", "fit_calibrators",
    "predict_logits", "train", "train_step",
]
