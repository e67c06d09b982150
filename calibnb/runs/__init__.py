"""Running experiments and reading their runs back: one run's folder, notebook execution, sweeps.

- :func:`execute` runs a text notebook with papermill parameters into a run folder
  (:func:`run_training`: the training itself, without the notebook);
- :func:`sweep` expands a YAML grid and runs what is unfinished, in-process or via submitit;
- :func:`describe`, :func:`sweep_summary`, :func:`sweep_settings`, :func:`sweep_candidates` and
  :func:`recipe_table` say what sweep files and training recipes hold, as the chapters show it;
- :func:`load_results` reads every finished run into one pandas table, :func:`label_methods`
  names their methods from their parameters (:func:`method_label`, :func:`method_family`), and
  :func:`select_by_validation` applies a sweep's hyper-parameter choice (:func:`select_runs`:
  all three for one sweep file);
- :func:`run_of`, :func:`adafocal_updates`, :func:`histories` and :func:`pooled_logits` read a
  selected run, its AdaFocal updates, its per-epoch history and its logits back for the figures;
- ``calibnb.runs.posthoc`` runs the post-hoc calibrators on the published CIFAR networks;
- ``calibnb.atomic`` (below both runs and train) writes every artifact atomically.

What the chapters compute from the runs (tables, claims, comparisons with the papers) is the
book's analysis, a layer above this one that reads the runs and that this package never imports.
"""

from ..atomic import atomic_path, load_logits, save_logits, save_npz, write_json, write_text
from .execute import code_version, execute, is_finished, is_pruned, run_training
from .methods import label_methods, method_family, method_label
from .naming import EXECUTION_KEYS, identity, run_name
from .results import (METRICS, adafocal_updates, histories, load_results, pooled_logits, prune_unselected,
                      run_of, select_by_validation, select_runs)
from .parameters import canonical_parameters
from .overview import (SWEEP_SETTINGS, describe, recipe_table, setting_text, sweep_candidates, sweep_settings,
                       sweep_summary, sweep_summary_markdown)
from .sweep import RunsFailed, expand_grid, load_config, plan, prune_sweep, sweep

__all__ = [
    "EXECUTION_KEYS",
    "RunsFailed",
    "METRICS",
    "SWEEP_SETTINGS",
    "adafocal_updates",
    "atomic_path",
    "canonical_parameters",
    "code_version",
    "describe",
    "execute",
    "expand_grid",
    "histories",
    "identity",
    "is_finished",
    "is_pruned",
    "label_methods",
    "load_config",
    "load_logits",
    "load_results",
    "method_family",
    "method_label",
    "plan",
    "pooled_logits",
    "run_name",
    "run_of",
    "run_training",
    "save_logits",
    "save_npz",
    "prune_sweep",
    "prune_unselected",
    "recipe_table",
    "select_by_validation",
    "select_runs",
    "setting_text",
    "sweep",
    "sweep_candidates",
    "sweep_settings",
    "sweep_summary",
    "sweep_summary_markdown",
    "write_json",
    "write_text",
]
