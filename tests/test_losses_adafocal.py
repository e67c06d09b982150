"""AdaFocal's gamma update (Ghosh et al. 2022, Algorithm 1), the stateful AdaFocalLoss and
AdaDualFocal, and CalFocal (§5.1): every branch of the rule, on hand-computed numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from calibnb.losses import AdaFocalLoss, CalFocalLoss, adafocal_update, dual_focal_loss, focal_loss

E = math.exp

# (gamma before, calibration gap C - A, gamma after) with lam=1, switch=0.2, range [-2, 20]
BRANCHES = {
    "focal, over-confident: gamma grows": (1.0, 0.1, E(0.1)),
    "focal, under-confident: gamma shrinks": (1.0, -0.1, E(-0.1)),
    "focal, calibrated: unchanged": (3.0, 0.0, 3.0),
    "inverse, over-confident: |gamma| shrinks": (-1.0, 0.1, -E(-0.1)),
    "inverse, under-confident: |gamma| grows": (-1.0, -0.1, -E(0.1)),
    "switch focal -> inverse": (0.21, -0.1, -0.2),
    "switch inverse -> focal": (-0.21, 0.1, 0.2),
    "gamma 0 counts as focal (Algorithm 1)": (0.0, 0.3, -0.2),
    "clip at gamma_max": (19.0, 0.5, 20.0),
    "clip at gamma_min": (-1.9, -0.5, -2.0),
    "empty bin (NaN gap): unchanged": (0.1, float("nan"), 0.1),
    "empty bin, large gamma: unchanged": (25.0, float("nan"), 25.0),
}


@pytest.mark.parametrize("case", sorted(BRANCHES))
def test_each_branch_of_the_update_rule(case):
    before, gap, after = BRANCHES[case]
    assert adafocal_update([before], [gap])[0] == pytest.approx(after, rel=1e-12)


def test_update_is_vectorised_over_bins_and_keeps_the_input_type():
    before, gaps, after = (np.array(column) for column in zip(*BRANCHES.values()))
    np.testing.assert_allclose(adafocal_update(before, gaps), after, rtol=1e-12)
    as_tensor = adafocal_update(torch.tensor(before, dtype=torch.float32), gaps)
    assert isinstance(as_tensor, torch.Tensor) and as_tensor.dtype == torch.float32
    np.testing.assert_allclose(as_tensor.numpy(), after, rtol=1e-6)


def test_lambda_scales_the_step_and_the_thresholds_are_parameters():
    assert adafocal_update([1.0], [0.1], lam=10.0)[0] == pytest.approx(E(1.0))
    assert adafocal_update([0.55], [-0.1], switch=0.5)[0] == pytest.approx(-0.5)  # ImageNet's S_th
    assert adafocal_update([46.0], [0.1], gamma_max=50.0)[0] == pytest.approx(50.0)
    assert adafocal_update([0.21], [-0.1], switch=0.0)[0] == pytest.approx(0.21 * E(-0.1))


@pytest.mark.parametrize(
    "gammas,gaps,params,error,message",
    [
        ([1.0, 2.0], [0.1], {}, ValueError, "gaps must have the shape of gammas"),
        ([1.0], [float("inf")], {}, ValueError, "gaps contains inf"),
        ([float("nan")], [0.1], {}, ValueError, "gammas must be a non-empty 1-D array of finite"),
        ([[1.0]], [[0.1]], {}, ValueError, "gammas must be a non-empty 1-D array"),
        ([1.0], [0.1], {"lam": -1.0}, ValueError, "lam must be >= 0"),
        ([1.0], [0.1], {"switch": -0.2}, ValueError, "switch must be >= 0"),
        ([1.0], [0.1], {"gamma_min": 1.0, "gamma_max": 0.0}, ValueError, r"gamma_max must be >= gamma_min, got gamma_max=0 and gamma_min=1"),
        (["a"], [0.1], {}, ValueError, "could not convert|must"),
    ],
)
def test_update_rejects_bad_input(gammas, gaps, params, error, message):
    with pytest.raises(error, match=message):
        adafocal_update(gammas, gaps, **params)


# ---------------------------------------------------------------- AdaFocalLoss.update


def validation_set(groups, k=10):
    """Probabilities (N, K) with the given top-label confidences; ``correct`` decides the label."""
    probs, labels = [], []
    for confidences, n_correct in groups:
        for i, c in enumerate(confidences):
            row = np.full(k, (1 - c) / (k - 1))
            row[0] = c
            probs.append(row)
            labels.append(0 if i < n_correct else 1)
    return torch.tensor(np.array(probs)), torch.tensor(labels)


GROUPS = [  # (confidences, number correct): gaps 0.345 - 0.2, 0.645 - 0.9, 0.945 - 1.0
    (np.linspace(0.30, 0.39, 10), 2),
    (np.linspace(0.60, 0.69, 10), 9),
    (np.linspace(0.90, 0.99, 10), 10),
]
GAPS = np.array([0.145, -0.255, -0.055])


def test_update_bins_validation_confidence_by_equal_mass_and_applies_the_rule():
    loss = AdaFocalLoss(n_bins=3)
    probs, labels = validation_set(GROUPS)
    loss.update(probs, labels)
    np.testing.assert_allclose(loss.edges.numpy(), [0.0, (0.39 + 0.60) / 2, (0.69 + 0.90) / 2, 1.0])
    np.testing.assert_allclose(loss.history[-1]["gaps"], GAPS, atol=1e-12)
    np.testing.assert_allclose(loss.gammas.numpy(), np.exp(GAPS), rtol=1e-12)
    loss.update(probs, labels)  # multiplicative: exp(gap) twice
    np.testing.assert_allclose(loss.gammas.numpy(), np.exp(2 * GAPS), rtol=1e-12)
    assert len(loss.history) == 2 and set(loss.history[0]) == {"edges", "gaps", "gammas"}


def test_update_switches_an_under_confident_bin_to_inverse_focal_and_back():
    probs, labels = validation_set(GROUPS)
    loss = AdaFocalLoss(n_bins=3, gamma_init=0.25)
    loss.update(probs, labels)
    # bin 1: 0.25 e^-0.255 = 0.194 < 0.2 -> inverse focal; bins 0 and 2 stay focal
    np.testing.assert_allclose(loss.gammas.numpy(), [0.25 * E(0.145), -0.2, 0.25 * E(-0.055)], rtol=1e-12)
    loss.update(probs, labels)  # still under-confident: the inverse focal gamma grows in magnitude
    assert loss.gammas[1].item() == pytest.approx(-0.2 * E(0.255))
    over = validation_set([(g[0], 0) for g in GROUPS])  # every bin now over-confident
    for _ in range(3):
        loss.update(*over)
    assert loss.gammas[1].item() > 0  # switched back to focal loss


def test_empty_validation_bins_keep_their_gamma():
    loss = AdaFocalLoss(n_bins=5, gamma_init=2.0)
    probs, labels = validation_set([(np.array([0.5, 0.7, 0.9]), 3)])
    loss.update(probs, labels)
    gaps = loss.history[-1]["gaps"]
    assert np.isnan(gaps).sum() == 2
    np.testing.assert_allclose(loss.gammas.numpy()[np.isnan(gaps)], 2.0)
    np.testing.assert_allclose(loss.gammas.numpy()[~np.isnan(gaps)], 2.0 * np.exp(gaps[~np.isnan(gaps)]))


def test_forward_looks_training_samples_up_by_true_class_probability():
    loss = AdaFocalLoss(n_bins=3, reduction="none")
    loss.update(*validation_set(GROUPS))
    gammas = loss.gammas.tolist()
    # p_t = 0.3, 0.6, 0.9 fall in [0, .495), [.495, .795), [.795, 1]; the top class is irrelevant
    rows = [[0.3, 0.6, 0.1], [0.6, 0.3, 0.1], [0.05, 0.05, 0.9]]
    z = torch.log(torch.tensor(rows, dtype=torch.float64))
    t = torch.tensor([0, 0, 2])
    values = loss(z, t)
    for i, gamma in enumerate(gammas):
        expected = focal_loss(z[i : i + 1], t[i : i + 1], gamma=gamma)
        assert values[i].item() == pytest.approx(expected.item(), rel=1e-12)


def test_adadualfocal_looks_samples_up_by_the_dual_gap():
    loss = AdaFocalLoss(n_bins=3, base="dual", reduction="none")
    loss.update(*validation_set(GROUPS))
    # p_k = 0.6, p_j = 0.3: p_k - p_j = 0.3 lies in bin 0 although p_k lies in bin 1
    z = torch.log(torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float64))
    t = torch.tensor([0])
    expected = dual_focal_loss(z, t, gamma=loss.gammas[0].item())
    assert loss(z, t).item() == pytest.approx(expected.item(), rel=1e-12)


def test_update_validates_its_input():
    loss = AdaFocalLoss()
    with pytest.raises(ValueError, match="rows must sum to 1"):
        loss.update(torch.full((4, 3), 0.5), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="labels must lie in"):
        loss.update(torch.full((4, 2), 0.5), torch.tensor([0, 1, 2, 0]))


# ---------------------------------------------------------------- CalFocal


def test_calfocal_case_2_starts_as_focal_gamma_1_and_uses_exp_of_the_bin_gap():
    z = torch.log(torch.tensor([[0.3, 0.6, 0.1], [0.6, 0.3, 0.1], [0.05, 0.05, 0.9]], dtype=torch.float64))
    t = torch.tensor([0, 0, 2])
    loss = CalFocalLoss(n_bins=3, lam=10.0, case=2, reduction="none")
    torch.testing.assert_close(loss(z, t), focal_loss(z, t, gamma=1.0, reduction="none"))
    loss.update(*validation_set(GROUPS))
    values = loss(z, t)
    for i, gap in enumerate(GAPS):
        expected = focal_loss(z[i : i + 1], t[i : i + 1], gamma=E(10.0 * gap))
        assert values[i].item() == pytest.approx(expected.item(), rel=1e-10)


def test_calfocal_case_1_uses_each_samples_distance_to_the_bin_accuracy():
    loss = CalFocalLoss(n_bins=3, lam=10.0, case=1, reduction="none")
    loss.update(*validation_set(GROUPS))
    accuracy = [0.2, 0.9, 1.0]
    np.testing.assert_allclose(loss.accuracies.numpy(), accuracy)
    z = torch.log(torch.tensor([[0.3, 0.6, 0.1], [0.6, 0.3, 0.1], [0.05, 0.05, 0.9]], dtype=torch.float64))
    z.requires_grad_()
    t = torch.tensor([0, 0, 2])
    loss(z, t).sum().backward()
    p_t = [0.3, 0.6, 0.9]
    frozen = z.detach().clone().requires_grad_()
    gammas = [E(10.0 * (p - a)) for p, a in zip(p_t, accuracy)]
    total = sum(focal_loss(frozen[i : i + 1], t[i : i + 1], gamma=g) for i, g in enumerate(gammas))
    total.backward()
    torch.testing.assert_close(z.grad, frozen.grad)  # gamma carries no gradient


def test_calfocal_keeps_statistics_of_empty_bins():
    loss = CalFocalLoss(n_bins=5)
    before = loss.accuracies.clone()
    loss.update(*validation_set([(np.array([0.5, 0.7, 0.9]), 3)]))
    empty = np.isnan(loss.history[-1]["accuracies"])
    assert empty.sum() == 2
    torch.testing.assert_close(loss.accuracies[torch.from_numpy(empty)], before[torch.from_numpy(empty)])


def test_update_rule_finds_the_gamma_that_closes_each_gap():
    """The claim of the AdaFocal chapter's simulation: with gaps that fall linearly in gamma,
    Algorithm 1 climbs to the gamma that zeroes each bin's gap, and a bin that is
    under-confident even under cross-entropy switches to inverse focal loss and settles there."""
    rng = np.random.default_rng(0)
    offsets, slope = np.array([0.25, 0.12, 0.05, -0.03]), 0.04
    gammas, switched_at = np.ones(4), None
    for epoch in range(150):
        gammas = adafocal_update(gammas, offsets - slope * gammas + 0.01 * rng.standard_normal(4))
        if switched_at is None and gammas[3] < 0:
            switched_at = epoch
    assert switched_at is not None and gammas[3] < -0.2
    np.testing.assert_allclose(gammas, offsets / slope, rtol=0.15)
