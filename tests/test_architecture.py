"""ARCHITECTURE.md stays true: every path it names exists, every package of calibnb has a
paragraph in it, and the code cites it rather than a design document outside the repository."""

import re

from conftest import REPO

TEXT = (REPO / "ARCHITECTURE.md").read_text()


def test_every_path_the_map_names_exists():
    named = set(re.findall(r"`((?:calibnb|tests|nbs|book|configs|results|bench)/[\w./*-]*)`", TEXT))
    assert len(named) > 20
    missing = [p for p in sorted(named) if not any(REPO.glob(p.rstrip("/")))]
    assert not missing, f"ARCHITECTURE.md names what does not exist: {missing}"


def test_every_package_has_its_paragraph():
    packages = sorted(p.parent.name for p in (REPO / "calibnb").glob("*/__init__.py"))
    missing = [name for name in packages if f"calibnb/{name}/" not in TEXT and name not in ("data", "models", "theory")]
    assert not missing, f"packages without a paragraph in ARCHITECTURE.md: {missing}"
    for name in ("data", "models", "theory"):  # named in the bird's-eye view
        assert re.search(rf"\b{name}\b", TEXT), name


def test_the_code_cites_the_architecture_not_an_absent_design_document():
    citing = [str(p.relative_to(REPO)) for folder in ("calibnb", "tests") for p in (REPO / folder).rglob("*.py")
              if "DESIGN.md" in p.read_text()]
    assert citing == ["tests/test_architecture.py"], citing
