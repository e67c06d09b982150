"""The book's sources follow the house rules (ARCHITECTURE.md, "Cross-cutting rules")."""

import subprocess

import yaml

from book_pages import REPO, is_notebook, source_of, toc_files


def test_every_toc_entry_exists():
    missing = [doc for doc in toc_files() if not source_of(doc).exists()]
    assert not missing, f"_toc.yml names files that do not exist: {missing}"


def test_every_chapter_in_nbs_is_in_the_toc():
    listed = set(toc_files())
    chapters = {f"nbs/{p.stem}" for p in (REPO / "nbs").glob("*.md")}
    assert chapters <= listed, f"chapters missing from _toc.yml: {sorted(chapters - listed)}"


def test_chapters_are_myst_notebooks_with_a_kernelspec():
    for path in (REPO / "nbs").glob("*.md"):
        assert is_notebook(path), f"{path.name} lacks the jupytext/kernelspec header"
        header = yaml.safe_load(path.read_text().split("---\n", 2)[1])
        assert header["jupytext"]["text_representation"]["format_name"] == "myst"
        assert header["kernelspec"]["name"] == "python3"


def test_no_generated_notebooks_or_large_files_are_tracked():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [f for f in tracked if f.startswith("nbs/") and f.endswith(".ipynb")]
    large = [f for f in tracked if (REPO / f).is_file() and (REPO / f).stat().st_size > 2**21]
    assert not large, f"files over 2 MB are tracked: {large}"


def test_every_citation_key_is_in_the_bibliography():
    import re

    bib = (REPO / "book/references.bib").read_text()
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M))
    cited = set()
    for doc in toc_files():
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", source_of(doc).read_text()):
            cited.update(k.strip() for k in group.split(","))
    assert cited <= keys, f"cited but not in references.bib: {sorted(cited - keys)}"
    for key in ["guo2017calibration", "mukhoti2020calibrating", "charoenphakdee2021focal",
                "lin2017focal", "kumar2019verified", "nixon2019measuring", "blasiok2023smooth",
                "wang2021rethinking", "ghosh2022adafocal", "tao2023dual", "fcl2024euclidean",
                "komisarenko2024improving"]:
        assert key in keys


def test_chapters_narrate_and_the_package_computes():
    """No chapter's code cell defines a function or a class (issue 16): the chapters call the
    package, whose builders have tests; a reader sees prose and calls, not analysis code."""
    import ast

    import jupytext

    defining = []
    for path in sorted((REPO / "nbs").glob("*.md")):
        for cell in jupytext.read(path).cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defining.append(f"{path.name}: {node.name}")
    assert not defining, f"chapters define functions or classes: {defining}"


RESULTS_PAGES = ["nbs/results.md", "nbs/results_figures.md", "nbs/cifar_posthoc.md"]
METHOD_CHAPTERS = ["nbs/measuring_calibration.md", "nbs/focal_analysis.md", "nbs/focal_loss_code.md",
                   "nbs/adafocal.md", "nbs/dual_focal.md",
                   "nbs/focal_calibration_loss.md", "nbs/focal_temperature_scaling.md"]


def test_results_pages_open_with_their_conclusion():
    """A reader of a results page meets its summary before any evidence (issue 17)."""
    for page in RESULTS_PAGES:
        text = (REPO / page).read_text()
        body = text.split("\n---\n", 1)[1]  # after the front matter
        assert "**In short.**" in body, page
        assert body.index("**In short.**") < body.index("```{code-cell}"), f"{page}: code before the summary"


def test_method_chapters_open_with_what_they_show():
    """A method chapter, like a results page, says what it shows before any code (issue 27):
    after its opening paragraph, "**In short.**" and three to five bullets."""
    for page in METHOD_CHAPTERS:
        body = (REPO / page).read_text().split("\n---\n", 1)[1]
        assert "**In short.**" in body, f"{page} has no 'In short' summary"
        summary = body[body.index("**In short.**"):body.index("```{code-cell}")]
        assert body.index("**In short.**") < body.index("## "), f"{page}: the summary comes after a section"
        bullets = [line for line in summary.splitlines() if line.startswith(("- ", "* "))]
        assert 3 <= len(bullets) <= 5, f"{page}: 'In short' has {len(bullets)} bullets (3 to 5)"


def test_method_chapters_end_with_exercises_and_hidden_solutions():
    for page in METHOD_CHAPTERS:
        text = (REPO / page).read_text()
        exercises = text.count("```{exercise}")
        assert exercises >= 3 and text.count("```{solution-start}") == exercises, page
        assert text.count(":class: dropdown") >= exercises, f"{page}: every solution hidden until asked for"
        if "## What we verified" in text:  # the exercises close the chapter
            assert text.index("## Exercises") > text.index("## What we verified"), page


def test_every_chapter_installs_calibnb_where_it_is_missing():
    """A chapter opened outside the repository (the Binder button, a downloaded notebook) runs:
    its first code cell, removed from the page, installs calibnb when it cannot be imported."""
    import jupytext

    for path in sorted((REPO / "nbs").glob("*.md")):
        first = next(cell for cell in jupytext.read(path).cells if cell.cell_type == "code")
        assert "remove-cell" in first.metadata.get("tags", []), path.name
        assert 'find_spec("calibnb") is None' in first.source and "pip" in first.source, path.name
