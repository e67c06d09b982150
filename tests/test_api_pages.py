"""The book's part "The calibnb API" (book/api/) documents every public name of the package.

Each page is a MyST page whose ``{eval-rst}`` blocks hold autodoc directives; the entries are
generated from the docstrings when the book is built. What a test can hold without building is
that the pages name every function and class of each package's ``__all__`` (so a new public
function cannot be left out), name nothing else, and are in the table of contents.
"""

import importlib
import inspect
import re

import pytest

from book_pages import REPO, toc_files

#: The packages with a page of their own, in the order of the part.
PACKAGES = ["metrics", "losses", "calibration", "data", "models", "train", "runs", "analysis", "plots", "explorable"]

DIRECTIVE = re.compile(r"^\.\. auto(function|class|data):: +(\S+)", re.M)
SUMMARY = re.compile(r"^\.\. autosummary::\n(?:   :\S+:.*\n)*\n((?:   \S+\n)+)", re.M)


def documented(package: str) -> dict[str, str]:
    """Name -> directive (``function``, ``class``, ``data``) of every entry on the package's page."""
    text = (REPO / "book" / "api" / f"{package}.md").read_text()
    entries = {}
    for kind, name in DIRECTIVE.findall(text):
        assert name not in entries, f"book/api/{package}.md documents {name} twice"
        entries[name] = kind
    return entries


def summarised(package: str) -> list[str]:
    text = (REPO / "book" / "api" / f"{package}.md").read_text()
    (block,) = SUMMARY.findall(text)
    return block.split()


def kind_of(obj) -> str:
    obj = inspect.unwrap(obj)  # a cached function (functools.cache) is a function
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    return "data"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_its_entry(package):
    module = importlib.import_module(f"calibnb.{package}")
    public = {name: kind_of(getattr(module, name)) for name in module.__all__}
    # besides its public names a page may document, by full name, a class its signatures name
    # (the loss modules' base class TrainingLoss, the counter count_host_reads yields)
    entries = {name: kind for name, kind in documented(package).items()
               if not name.startswith(f"calibnb.{package}.")}
    missing = sorted(n for n, kind in public.items() if kind != "data" and n not in entries)
    assert not missing, f"book/api/{package}.md has no entry for calibnb.{package}.{missing}"
    # constants are documented too, each by the '#:' comment where it is assigned
    assert set(entries) == set(public), (
        f"book/api/{package}.md and calibnb.{package}.__all__ differ: "
        f"{sorted(set(entries) ^ set(public))}")
    wrong = {n: (entries[n], public[n]) for n in public if entries[n] != public[n]}
    assert not wrong, f"entries documented with the wrong directive (page, object): {wrong}"
    assert sorted(summarised(package)) == sorted(public), f"the summary table of book/api/{package}.md is stale"


def test_every_api_page_is_in_the_part():
    pages = [doc for doc in toc_files() if doc.startswith("book/api/")]
    assert pages == ["book/api/index"] + [f"book/api/{p}" for p in PACKAGES]
    on_disk = {p.stem for p in (REPO / "book" / "api").glob("*.md")}
    assert on_disk == {"index", *PACKAGES}


def test_the_pages_need_no_generated_stubs():
    """autosummary only links to the entries on the page: a ``:toctree:`` would make Sphinx
    write stub files into the source tree at build time."""
    for package in PACKAGES:
        assert ":toctree:" not in (REPO / "book" / "api" / f"{package}.md").read_text()
