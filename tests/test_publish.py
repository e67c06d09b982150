"""How the book reaches readers and CI: the README's two commands, run as they are everywhere.

The GitHub Actions workflow publishes what the README's commands build; ``make publish`` does the
same by hand; ``.ci/run`` runs the same commands on a fresh machine without installing any data
(``make book`` fetches it); the book's pages link back to the repository.
"""

import re

import pytest
import yaml

from conftest import REPO


def readme_commands() -> list[str]:
    """The commands of the README's "Two commands" block, comments dropped."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Two commands.*?```bash\n(.*?)```", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load((REPO / ".github/workflows/book.yml").read_text())


def test_the_readme_names_two_commands():
    assert sorted(readme_commands()) == ["make book", "make test"]


def test_workflow_runs_exactly_the_readme_commands_on_a_push_to_main(workflow):
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert triggers["push"]["branches"] == ["main"]
    build = workflow["jobs"]["build"]["steps"]
    runs = [step["run"].strip() for step in build if "run" in step]
    assert sorted(runs) == sorted(readme_commands())
    assert runs.index("make test") < runs.index("make book")  # a red test publishes nothing


def test_workflow_deploys_the_built_site_to_pages(workflow):
    steps = workflow["jobs"]["build"]["steps"]
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}


def test_make_publish_pushes_the_built_site_with_a_pinned_ghp_import():
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^publish:.*?\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "$(BIN)/ghp-import -n -p -f _build/html" in recipe
    pins = (REPO / "requirements.txt").read_text().splitlines()
    assert any(re.fullmatch(r"ghp-import==[\d.]+", line) for line in pins)


def test_ci_runs_the_readme_commands_without_installing_data():
    script = (REPO / ".ci/run").read_text()
    code = "\n".join(line.split("#")[0] for line in script.splitlines())
    for command in readme_commands():
        assert re.search(rf"^\s*{command}\s*$", code, re.M), command
    assert "dataset-fashion-mnist" not in code and "CALIBNB_DATA=" not in code
    assert re.search(r"^unset CALIBNB_DATA$", code, re.M)  # no data set given by hand
    assert re.search(r"XDG_CACHE_HOME=.*mktemp", code)  # an empty per-user cache
    assert re.search(r"make test-transcriptions PAPERS=\S*shared/papers", code)


def test_the_book_links_to_its_repository():
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    assert config["repository"]["url"].startswith("https://github.com/")
    assert config["repository"]["branch"] == "main"
    html = config["html"]
    assert html["use_repository_button"] and html["use_issues_button"] and html["use_download_button"]
