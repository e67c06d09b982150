"""The book's table of contents, read from _toc.yml, for the structure and browser tests."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def toc_files() -> list[str]:
    """Every document named in _toc.yml (root first), without extension, in reading order."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def source_of(doc: str) -> Path:
    """The source file of a toc entry (.md)."""
    return REPO / f"{doc}.md"


def notebook_chapters() -> list[Path]:
    """The chapters that are notebooks: MyST-Markdown files with a jupytext kernelspec header."""
    return [source_of(doc) for doc in toc_files() if is_notebook(source_of(doc))]


def is_notebook(path: Path) -> bool:
    text = path.read_text()
    if not text.startswith("---\n"):
        return False
    header = yaml.safe_load(text.split("---\n", 2)[1])
    return isinstance(header, dict) and "kernelspec" in header
