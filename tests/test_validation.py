"""The shared input checks: each bad input gives an error that names the argument."""

import numpy as np
import pytest
import torch

from calibnb._validation import (
    check_choice,
    check_grid,
    check_int,
    check_labels,
    check_logits,
    check_probs,
    check_probs_labels,
    check_real,
)


def test_probs_accepts_numpy_torch_and_lists_as_float64():
    rows = [[0.2, 0.8], [0.5, 0.5]]
    for value in (rows, np.array(rows, np.float32), torch.tensor(rows, dtype=torch.bfloat16)):
        out = check_probs(value)
        assert out.dtype == np.float64 and out.shape == (2, 2)


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.array([0.2, 0.8]), "2-D"),
        (np.zeros((0, 3)), "empty"),
        (np.ones((3, 1)), "at least 2 classes"),
        (np.array([[np.nan, 1.0]]), "NaN"),
        (np.array([[np.inf, 0.0]]), "NaN or inf"),
        (np.array([[-0.1, 1.1]]), "negative"),
        (np.array([[0.3, 0.3]]), "sum to 1"),
    ],
)
def test_bad_probs_raise_value_error_naming_probs(bad, message):
    with pytest.raises(ValueError, match=f"probs.*{message}|{message}"):
        check_probs(bad)
    with pytest.raises(ValueError, match="probs"):
        check_probs(bad)


def test_probs_of_strings_is_a_type_error():
    with pytest.raises(TypeError, match="probs"):
        check_probs(np.array([["a", "b"]]))


def test_labels_checks():
    p = np.full((3, 4), 0.25)
    _, y = check_probs_labels(p, [0, 3, 2])
    assert y.dtype == np.int64
    whole = check_labels(np.array([0.0, 1.0, 2.0]), 3, 4)  # whole-number floats are the integers
    assert whole.dtype == np.int64 and whole.tolist() == [0, 1, 2]
    assert check_labels(torch.tensor([3.0, 0.0]), 2, 4).tolist() == [3, 0]
    with pytest.raises(TypeError, match=r"labels.*integer.*1\.5 at index 1"):
        check_labels(np.array([0.0, 1.5, 2.0]), 3, 4)
    with pytest.raises(ValueError, match="labels.*integer.*nan"):  # DtypeError is both
        check_labels(np.array([0.0, np.nan, 2.0]), 3, 4)
    with pytest.raises(TypeError, match="labels"):
        check_labels(np.array([True, False, True]), 3, 4)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        check_labels([0, 4, 1], 3, 4)
    with pytest.raises(ValueError, match=r"labels must lie"):
        check_labels([0, -1, 1], 3, 4)
    with pytest.raises(ValueError, match="labels has 2 entries"):
        check_labels([0, 1], 3, 4)
    with pytest.raises(ValueError, match="labels must be 1-D"):
        check_labels([[0, 1, 2]], 3, 4)


def test_logits_checks():
    assert check_logits(torch.randn(4, 3)).dtype == np.float64
    with pytest.raises(ValueError, match="logits contains NaN"):
        check_logits([[0.0, float("nan")]])
    with pytest.raises(ValueError, match="logits must be 2-D"):
        check_logits([0.0, 1.0])


def test_scalar_checks():
    assert check_int(15, "n_bins", minimum=1) == 15
    assert check_int(np.int64(3), "n_bins") == 3
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        check_int(0, "n_bins", minimum=1)
    with pytest.raises(TypeError, match="n_bins must be an integer"):
        check_int(2.5, "n_bins")
    with pytest.raises(TypeError, match="n_bins"):
        check_int(True, "n_bins")
    assert check_real(2, "gamma", minimum=0) == 2.0
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        check_real(-1, "gamma", minimum=0)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        check_real(0.0, "temperature", minimum=0, strict_minimum=True)
    with pytest.raises(ValueError, match="lam must be finite"):
        check_real(float("nan"), "lam")
    with pytest.raises(ValueError, match="lam must be <= 1"):
        check_real(2.0, "lam", maximum=1)
    with pytest.raises(ValueError, match="binning must be one of"):
        check_choice("quantile", "binning", {"width", "mass"})


def test_grid_checks():
    default = np.array([0.5, 1.0])
    np.testing.assert_array_equal(check_grid(None, default, "temperatures"), default)
    got = check_grid([1, 2], default, "temperatures", positive=True)
    assert got.dtype == np.float64 and got.tolist() == [1.0, 2.0]
    assert check_grid([-1.0, 0.5], default, "gammas", minimum=-1.0).tolist() == [-1.0, 0.5]
    for bad, message in [([], "temperatures must be a non-empty 1-D"),
                         ([[1.0]], "temperatures must be a non-empty 1-D"),
                         ([1.0, 0.0], "temperatures must be > 0"),
                         ([1.0, np.inf], "temperatures must be finite")]:
        with pytest.raises(ValueError, match=message):
            check_grid(bad, default, "temperatures", positive=True)
    with pytest.raises(ValueError, match="gammas must be >= -1"):
        check_grid([-1.5], default, "gammas", minimum=-1.0)


def test_half_precision_probabilities_get_a_tolerance_of_twice_their_epsilon():
    rows = torch.tensor([[0.2, 0.8], [0.1, 0.9]])
    assert check_probs(rows.to(torch.bfloat16)).shape == (2, 2)  # 0.2 + 0.8 = 1.00098 in bf16
    assert check_probs(rows.to(torch.float16)).shape == (2, 2)
    assert check_probs(np.array([[0.2, 0.8]], np.float16)).shape == (1, 2)
    with pytest.raises(ValueError, match="sum to 1"):
        check_probs(np.array([[0.2, 0.81]], np.float16))  # off by 1e-2 > 2e-3
    with pytest.raises(ValueError, match="sum to 1"):
        check_probs(np.array([[0.2, 0.8002]]))  # float64 keeps the strict 1e-4
