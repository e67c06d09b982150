"""calibnb: the code behind the calibnb book.

Losses, metrics and post-hoc calibrators from five papers on calibrating neural networks with
focal-loss variants (Mukhoti et al. 2020; Ghosh et al. 2022; Tao et al. 2023; the focal
calibration loss paper; Komisarenko & Kull 2024). Submodules are imported on demand so that
``import calibnb`` stays cheap::

    from calibnb.metrics import ece
    from calibnb.losses import focal_loss
    from calibnb.calibration import TemperatureScaling
"""

__version__ = "0.1.0"
