"""The release workflow (.github/workflows/release.yml), held to its steps as tests/test_publish.py
holds the Pages workflow: a tag ``v*`` is published only if it equals ``calibnb.__version__``,
after the sdist and wheel are built and the wheel is installed alone and used, and by PyPI trusted
publishing (an OIDC token for the ``pypi`` environment, never a stored password)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import calibnb
from conftest import REPO

TEXT = (REPO / ".github/workflows/release.yml").read_text()


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(TEXT)


def position(steps: list[dict], predicate) -> int:
    (index,) = [i for i, step in enumerate(steps) if predicate(step)]
    return index


def uses(action: str):
    return lambda step: step.get("uses", "").split("@")[0] == action


def runs(pattern: str):
    return lambda step: re.search(pattern, step.get("run", ""), re.M) is not None


def test_only_a_pushed_version_tag_releases(workflow):
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert triggers == {"push": {"tags": ["v*"]}}


def test_permissions_are_read_only_except_the_publish_jobs_oidc_token(workflow):
    assert workflow["permissions"] == {"contents": "read"}
    assert "permissions" not in workflow["jobs"]["build"]
    assert workflow["jobs"]["publish"]["permissions"] == {"id-token": "write"}


def test_the_build_job_checks_the_tag_then_builds_then_installs_the_wheel_alone(workflow):
    steps = workflow["jobs"]["build"]["steps"]
    order = [
        position(steps, uses("actions/checkout")),
        position(steps, uses("actions/setup-python")),
        position(steps, runs(r"GITHUB_REF_NAME\" != ")),
        position(steps, runs(r"^python -m build\b")),
        position(steps, runs(r"-m venv\b")),
        position(steps, uses("actions/upload-artifact")),
    ]
    assert order == sorted(order) and len(set(order)) == len(order), order
    build = steps[position(steps, runs(r"^python -m build\b"))]["run"]
    assert "pip install -c constraints.txt build" in build  # the pinned build of requirements-test.txt
    smoke = steps[position(steps, runs(r"-m venv\b"))]["run"]
    install = next(line for line in smoke.splitlines() if "pip install" in line)
    assert "dist/*.whl" in install and "-c constraints.txt" in install
    assert "[" not in install, "the smoke install must bring no extra"
    # pip's index options of requirements.txt (none today) reach the smoke install too
    options = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()
               if line.startswith("-")]
    assert all(option in install for option in options), options
    assert "tests/wheel_smoke.py" in smoke and '"${GITHUB_REF_NAME#v}"' in smoke
    upload = steps[position(steps, uses("actions/upload-artifact"))]
    assert upload["with"]["path"] == "dist/"


def test_the_tag_check_compares_the_tag_with_calibnb_version(workflow):
    """The check's own shell, run from the repository root as on the runner, on a matching tag
    and on mismatching ones."""
    steps = workflow["jobs"]["build"]["steps"]
    check = steps[position(steps, runs(r"GITHUB_REF_NAME\" != "))]["run"]
    assert "calibnb.__version__" in check
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"  # `python` is this test's interpreter

    def verdict(tag: str) -> int:
        return subprocess.run(["bash", "-e", "-c", check], cwd=REPO, capture_output=True,
                              env={"PATH": path, "GITHUB_REF_NAME": tag}).returncode

    assert verdict(f"v{calibnb.__version__}") == 0
    assert verdict(f"v{calibnb.__version__}.post9") == 1
    assert verdict(calibnb.__version__) == 1  # without the v


def test_the_publish_job_uploads_the_built_artifact_by_trusted_publishing(workflow):
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["environment"]["name"] == "pypi"
    assert publish["environment"]["url"] == "https://pypi.org/p/calibnb"
    steps = publish["steps"]
    assert [step["uses"].split("@")[0] for step in steps] == ["actions/download-artifact", "pypa/gh-action-pypi-publish"]
    assert steps[0]["with"] == {"name": "dist", "path": "dist/"}
    assert "with" not in steps[1], "no password or token: trusted publishing"
    assert not re.search(r"secrets\.|password|PYPI_TOKEN", TEXT, re.I)


def test_every_action_is_pinned_to_a_release(workflow):
    actions = [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert len(actions) == 5
    for action in actions:
        assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+(\.\d+){0,2}", action), f"{action} is not pinned to a release"
    publish = next(a for a in actions if a.startswith("pypa/gh-action-pypi-publish@"))
    assert re.fullmatch(r".*@v\d+\.\d+\.\d+", publish), "the third-party action that uploads: an exact release"
