"""Every public function and class of the documented packages shows an example that runs.

`make test` runs the ``Examples`` sections of these packages as doctests (``--doctest-modules``
over ``DOCTEST_PACKAGES`` in the Makefile); this test makes sure there is one to run: for each
name in a package's ``__all__`` that is a function or a class defined in calibnb, the docstring
must have a numpydoc ``Examples`` section with at least one ``>>>`` line. Constants (the papers'
grids) have no docstring of their own and are not checked.
"""

import importlib
import inspect
import re

import pytest

from conftest import REPO

PACKAGES = ["calibnb.metrics", "calibnb.calibration", "calibnb.losses"]

# The "Examples" heading underlined with dashes, then everything up to the next numpydoc heading.
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(.*?)(?=^\w[\w ]*\n-{3,}\n|\Z)", re.MULTILINE | re.DOTALL)


def has_example(obj) -> bool:
    """Whether ``obj``'s docstring has an ``Examples`` section holding a ``>>>`` line."""
    doc = inspect.getdoc(obj) or ""
    return any(re.search(r"^>>> ", section, re.MULTILINE) for section in EXAMPLES.findall(doc))


def public_callables(package: str) -> list[tuple[str, object]]:
    """The functions and classes named in ``package.__all__`` (constants left out)."""
    module = importlib.import_module(package)
    return [(name, getattr(module, name)) for name in module.__all__
            if inspect.isfunction(getattr(module, name)) or inspect.isclass(getattr(module, name))]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_function_and_class_has_an_example(package):
    found = public_callables(package)
    assert found, f"{package}.__all__ names no function or class"
    missing = [name for name, obj in found if not has_example(obj)]
    assert not missing, f"{package}: no Examples section with a '>>>' line in {missing}"


@pytest.mark.parametrize("package", PACKAGES)
def test_make_test_runs_the_package_doctests(package):
    """The package's folder is in the Makefile's DOCTEST_PACKAGES, which `make test` passes to
    pytest with --doctest-modules."""
    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^DOCTEST_PACKAGES\s*:?=(.*)$", makefile, re.MULTILINE)
    assert listed and package.replace(".", "/") in listed.group(1).split(), "DOCTEST_PACKAGES"
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "--doctest-modules $(DOCTEST_PACKAGES)" in recipe, recipe


def test_the_check_sees_a_missing_example():
    def documented():
        """One line.

        Examples
        --------
        >>> 1 + 1
        2
        """

    def headed_but_empty():
        """One line.

        Examples
        --------
        Call it.

        Returns
        -------
        >>> 1
        """

    def undocumented():
        pass

    assert has_example(documented)
    assert not has_example(headed_but_empty)  # the `>>>` belongs to another section
    assert not has_example(undocumented)
