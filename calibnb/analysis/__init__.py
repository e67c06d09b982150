"""The book's analysis: what the result chapters show, computed from finished runs.

It reads what :mod:`calibnb.runs` produced (run tables, the post-hoc study) and the papers'
transcribed tables (``calibnb.paper_tables``), and writes nothing. One concept per module:

- ``calibnb.analysis.ordering``: the papers' order of methods (:data:`FAMILIES`,
  :func:`method_order`), the rows of every table;
- ``calibnb.analysis.verdicts``: the paired rule that judges a claim from per-seed
  differences (:func:`paired_verdict`) and how two regimes' verdicts relate
  (:func:`verdict_agreement`);
- ``calibnb.analysis.tables``: the results chapter's tables (mean ± std over seeds, the
  papers' Table 1 layout, paired calibrators, the selection table, ``styled()``);
- ``calibnb.analysis.claims``: the papers' claims judged on one regime's runs;
- ``calibnb.analysis.beside_papers``: our means beside the papers' transcribed tables;
- ``calibnb.analysis.posthoc_tables``: the post-hoc study read back and tabulated.

The chapters import the tables, claims and comparisons from their modules; the names below are
the ones every one of them shares. The method *labels* (``"FL-3"``, ``"DFL (γ=2)"``) come from a
run's parameters and belong to the runs (:func:`calibnb.runs.label_methods`).
"""

from .ordering import FAMILIES, method_order
from .verdicts import VERDICTS, paired_verdict, verdict_agreement

__all__ = [
    "FAMILIES",
    "VERDICTS",
    "method_order",
    "paired_verdict",
    "verdict_agreement",
]
