"""calibnb: the code behind the calibnb book.

Losses, metrics and post-hoc calibrators from five papers on calibrating neural networks with
focal-loss variants (Mukhoti et al. 2020; Ghosh et al. 2022; Tao et al. 2023; the focal
calibration loss paper; Komisarenko & Kull 2024). Submodules are imported on demand so that
``import calibnb`` stays cheap::

    from calibnb.metrics import ece
    from calibnb.losses import focal_loss
    from calibnb.calibration import TemperatureScaling

    import calibnb
    result = calibnb.calibrate(val_logits, val_labels, test_logits, test_labels)  # choose a calibrator
    result.save("calibration-report")                                            # and keep it

Layers, each importing only from the layers above it (the chapters import from any)::

    _validation, _progress, _threads, atomic
                                         input checks; progress bars; one torch thread for a
                                         block; atomic file writes
    user_files                           a user's logits files (.npz, .npy, .pt), never unpickled
    metrics, models, data, paper_tables  calibration metrics; networks; data sets and their fetch
                                         step; the papers' transcribed tables
    losses, calibration                  training losses (fast and reference); post-hoc
                                         calibrators (scikit-learn estimators)
    toy, synthetic                       small worked problems and synthetic logits
    train                                the training loop and recipes
    theory, runs                         the papers' analytic objects and experiments; run
                                         folders, notebook execution, sweeps, reading runs back
    analysis                             what the chapters show from the runs: tables, claims,
                                         the papers beside ours, verdicts (writes nothing)
    plots, plots_simplex, plots_theory, explorable
                                         figures; figures a reader moves (precomputed frames
                                         behind a slider, for the static book)
    calibrate_model                      one call from a model's logits to a chosen, saved
                                         calibrator (``calibnb.calibrate``)
    __main__                             the command line
    nbs/*.md                             the chapters: narrate and import, never define

``tests/test_layers.py`` holds the package to this order.
"""

#: The one place the version is written: pyproject.toml reads it ([tool.setuptools.dynamic]), and
#: the release workflow (.github/workflows/release.yml) publishes only a tag ``v<__version__>``.
__version__ = "0.1.0"

#: Names of the package that live in a submodule, imported on first use (PEP 562).
_LAZY = {"calibrate": "calibrate_model", "CalibrationResult": "calibrate_model"}


def __getattr__(name: str):
    if name in _LAZY:
        from . import calibrate_model

        return getattr(calibrate_model, name)
    raise AttributeError(f"module 'calibnb' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
