"""What sweep files and training recipes hold, as the chapters show it (calibnb.runs.overview):
the reproducing chapter's list of sweep files and its recipe table, the results chapter's
sweep settings and candidates."""

import pytest

from calibnb.runs import (describe, expand_grid, recipe_table, setting_text, sweep_candidates, sweep_settings,
                          sweep_summary, sweep_summary_markdown)
from calibnb.train import RECIPES
from conftest import REPO

TRAIN = REPO / "nbs" / "train.md"


def sweep_file(folder, name: str, body: str, comment: str = "# A made-up sweep. Its second sentence.\n"):
    path = folder / name
    path.write_text(f"{comment}notebook: {TRAIN}\nout_root: runs/{path.stem}\n{body}")
    return path


SMALL = """params:
  dataset: fashion-mnist
  model: mlp
  recipe: cpu
  ood: [mnist, gaussian_noise]
select: {by: loss, among: [dual_focal_loss], params: [gamma]}
grid:
  - loss: [cross_entropy, focal_loss_sd]
    seed: [1, 2]
  - loss: adafocal
    loss_params: {base: dual}
    seed: 1
  - loss: dual_focal_loss
    gamma: [1, 2, 3]
    seed: [1, 2]
"""


def test_describe_gives_the_first_whole_sentence_of_a_sweep_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("# Dual focal loss, Table 1 (Tao et al. 2023): ECE pre/post T, CIFAR-10/100,\n"
                    "# four networks. γ per setting from the README.\n#   python -m calibnb sweep s.yaml\n"
                    "notebook: x\n")
    assert describe(path) == "Dual focal loss, Table 1 (Tao et al. 2023): ECE pre/post T, CIFAR-10/100, four networks."
    assert describe(REPO / "configs/fashion_mnist_cpu.yaml").endswith("on real data on a CPU.")


def test_sweep_summary_counts_the_runs_and_names_the_data_and_losses(tmp_path):
    small = sweep_file(tmp_path, "b.yaml", SMALL)
    other = sweep_file(tmp_path, "a.yaml", "params: {model: mlp}\ngrid: {dataset: [mnist1d, fashion-mnist], "
                       "loss: brier_loss, seed: 1}\n", comment="# Another one (et al. 2023). Not this.\n")
    table = sweep_summary(tmp_path)  # a folder: its files by name
    assert list(table.index) == ["a.yaml", "b.yaml"] and table.index.name == "sweep file"
    # 2 losses × 2 seeds, 1 AdaDualFocal run, 3 γ × 2 seeds
    assert table.loc["b.yaml"].to_dict() == {
        "runs": 4 + 1 + 6, "regenerates": "A made-up sweep.", "data sets": ("fashion-mnist",),
        "losses": ("adafocal", "cross_entropy", "dual_focal_loss", "focal_loss_sd")}
    assert table.loc["a.yaml", "data sets"] == ("fashion-mnist", "mnist1d")
    assert table.loc["a.yaml", "regenerates"] == "Another one (et al. 2023)."
    assert sweep_summary([small]).equals(sweep_summary(small)) and len(sweep_summary([other, small])) == 2
    assert sweep_summary_markdown([other]) == (
        "- **`configs/a.yaml`**, 2 runs. Another one (et al. 2023).\n"
        "  Data: `fashion-mnist`, `mnist1d`. Losses: `brier_loss`.")


def test_sweep_summary_of_the_repository_covers_every_sweep_file():
    files = sorted((REPO / "configs").glob("*.yaml"))
    table = sweep_summary(REPO / "configs")
    assert list(table.index) == [f.name for f in files]
    for f in files[:3]:
        assert table.loc[f.name, "runs"] == len(expand_grid(f))
    text = sweep_summary_markdown(REPO / "configs")
    assert text.count("\n- **`configs/") == len(files) - 1 and "Losses: " in text


def test_sweep_settings_set_files_side_by_side_as_written(tmp_path):
    small = sweep_file(tmp_path, "small.yaml", SMALL)
    bare = sweep_file(tmp_path, "bare.yaml", "params: {dataset: mnist1d, epochs: 60}\n"
                      "grid: {loss: cross_entropy, seed: 1}\n")
    table = sweep_settings({"A": small, "B": bare})
    assert list(table.columns) == ["A", "B"] and table.index.name == "setting"
    assert table.loc["data set"].tolist() == ["fashion-mnist", "mnist1d"]
    assert table.loc["out-of-distribution sets"].tolist() == ["mnist, gaussian_noise", "none"]
    assert table.loc["epochs"].tolist() == ["default", "60"]  # absent: the notebook's default
    assert table.loc["runs in"].tolist() == ["runs/small", "runs/bare"]  # as written, not resolved
    assert sweep_settings({"A": small}, {"model": "net"}).to_dict() == {"A": {"net": "mlp"}}


def test_sweep_candidates_lists_each_loss_of_the_grid_with_its_settings(tmp_path):
    table = sweep_candidates(sweep_file(tmp_path, "small.yaml", SMALL))
    assert table.to_dict("records") == [
        {"loss": "cross_entropy", "candidate settings": "", "seeds": "1, 2", "chosen on validation": ""},
        {"loss": "focal_loss_sd", "candidate settings": "", "seeds": "1, 2", "chosen on validation": ""},
        {"loss": "adafocal", "candidate settings": "base = dual", "seeds": "1", "chosen on validation": ""},
        {"loss": "dual_focal_loss", "candidate settings": "gamma = 1, 2, 3", "seeds": "1, 2",
         "chosen on validation": "yes"}]
    book = sweep_candidates(REPO / "configs/fashion_mnist_cpu.yaml")
    fcl = book[book["loss"] == "focal_calibration_loss"].iloc[0]
    assert fcl["candidate settings"] == "gamma = 2, 3, 4; lam = 0.5, 1.5" and fcl["chosen on validation"] == "yes"


def test_setting_text_writes_lists_mappings_and_defaults():
    assert setting_text([1, 2, 3]) == "1, 2, 3" and setting_text([]) == ""
    assert setting_text({"base": "dual", "gamma": 3}) == "base = dual, gamma = 3"
    assert setting_text(None) == "default" and setting_text(5e-4) == "0.0005"


def test_recipe_table_says_each_recipe_in_words():
    table = recipe_table()
    assert list(table.index) == list(RECIPES) and table.index.name == "recipe"
    assert table.loc["mukhoti2020"].to_dict() == {
        "epochs": 350, "batch": 128, "optimiser": "SGD, momentum 0.9",
        "learning rate": "0.1, ×0.1 after epochs 150, 250", "weight decay": "0.0005",
        "loss over the batch": "sum", "gradient clip": "2", "model evaluated": "last epoch's"}
    assert table.loc["ghosh2022_bert", "learning rate"] == "2e-05, warm-up 0.2 epoch, then linear decay"
    assert table.loc["ghosh2022_bert", "optimiser"] == "AdamW"
    assert table.loc["liang2024_text", "learning rate"] == "0.001, constant"
    assert table.loc["liang2024_text", "model evaluated"] == "lowest validation error"
    assert table.loc["ghosh2022_imagenet", "gradient clip"] == ""  # no clipping
    assert list(recipe_table({"cpu": RECIPES["cpu"]}).index) == ["cpu"]


def test_bad_arguments_are_refused_by_name(tmp_path):
    not_sweep = tmp_path / "x.yaml"
    not_sweep.write_text("a: 1\n")
    with pytest.raises(ValueError, match="not a sweep file"):
        sweep_candidates(not_sweep)
    with pytest.raises(ValueError, match="no such file"):
        sweep_settings({"A": tmp_path / "missing.yaml"})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no sweep file"):
        sweep_summary(tmp_path / "empty")
    with pytest.raises(ValueError, match="paths: no sweep file given"):
        sweep_summary([])
    with pytest.raises(TypeError, match="paths"):
        sweep_summary({"a": 1})
    with pytest.raises(TypeError, match="sweeps"):
        sweep_settings([not_sweep])
    with pytest.raises(TypeError, match=r"recipes\['x'\]"):
        recipe_table({"x": "cpu"})
    with pytest.raises(TypeError, match="folder"):
        sweep_summary_markdown([not_sweep], folder=3)
    with pytest.raises(ValueError, match="sweeps: no sweep file given"):
        sweep_settings({})
    with pytest.raises(ValueError, match="recipes: no recipe given"):
        recipe_table({})

