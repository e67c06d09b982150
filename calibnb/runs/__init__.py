"""One run's folder, notebook execution, sweeps, and reading results back.

- :func:`execute` runs a text notebook with papermill parameters into a run folder;
- :func:`sweep` expands a YAML grid and runs what is unfinished, in-process or via submitit;
- :func:`load_results` reads every finished run into one pandas table;
- :mod:`calibnb.runs.atomic` writes every artifact atomically.
"""

from .atomic import atomic_path, load_logits, save_logits, save_npz, write_json, write_text
from .execute import code_version, execute, is_finished, run_training
from .naming import EXECUTION_KEYS, identity, run_name
from .results import METRICS, load_results, prune_unselected, select_by_validation
from .sweep import expand_grid, load_config, plan, sweep

__all__ = [
    "EXECUTION_KEYS",
    "METRICS",
    "atomic_path",
    "code_version",
    "execute",
    "run_training",
    "expand_grid",
    "identity",
    "is_finished",
    "load_config",
    "load_logits",
    "load_results",
    "plan",
    "run_name",
    "save_logits",
    "save_npz",
    "select_by_validation",
    "prune_unselected",
    "sweep",
    "write_json",
    "write_text",
]
