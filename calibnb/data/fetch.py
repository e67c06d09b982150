"""Fetching a data set's published files into the per-user cache, checked and written atomically.

``make data`` (and so ``make book``) calls :func:`fetch` through ``python -m calibnb fetch``.
Two sources are tried in order, for each data set in :data:`RELEASES`:

1. **The canonical published files**, downloaded over HTTP(S) from each mirror in turn, each
   checked against its published md5 (the md5 of the ``.gz`` archive itself, as torchvision
   lists it) before it is renamed into place.
2. **Debian's package** (``apt-get download`` + ``dpkg-deb -x``), for machines that reach
   Debian's archive but not the web. apt keeps its package lists in the cache
   (``-o Dir::State::Lists=<cache>/apt/lists``), so nothing of the system is updated or
   installed and no root is needed. Debian recompresses the archives, so these files are checked
   by the md5 of their *decompressed* content (:data:`calibnb.data.EXPECTED_MD5`).

Every file is written under a temporary name in the destination folder and renamed only once it
is complete and verified: an interrupted or corrupt fetch leaves nothing that a later run could
trust. The cache is ``$XDG_CACHE_HOME/calibnb``, else ``~/.cache/calibnb``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import urllib.request
from http.client import HTTPException
from dataclasses import dataclass
from pathlib import Path

from ..atomic import atomic_path
from .integrity import EXPECTED_MD5, md5sum

log = logging.getLogger(__name__)

#: Seconds without an answer after which a mirror counts as unreachable.
TIMEOUT = 20


@dataclass(frozen=True)
class Release:
    """Where a data set's published files are, and how each is checked.

    Attributes
    ----------
    folder : the folder name the files land in (below the cache), as ``load_dataset`` looks
        for it.
    archive_md5 : file name -> md5 of the published file as served by the mirrors.
    content_md5 : file name -> md5 of its decompressed content (what Debian's copy is checked by).
    mirrors : base URLs, tried in order; a file's URL is ``mirror + name``.
    debian_package, debian_path : the Debian package holding the files, and the folder inside it.
    """

    folder: str
    archive_md5: dict[str, str]
    content_md5: dict[str, str]
    mirrors: tuple[str, ...]
    debian_package: str | None = None
    debian_path: str = ""


#: The data sets the book executes on. Fashion-MNIST (Xiao et al. 2017): the original archives
#: (md5s as torchvision's ``FashionMNIST.resources`` lists them), 30 MB.
RELEASES: dict[str, Release] = {
    "fashion-mnist": Release(
        folder="fashion-mnist",
        archive_md5={
            "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
            "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
            "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
        },
        content_md5=EXPECTED_MD5["fashion-mnist"],
        mirrors=(
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
            "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
        ),
        debian_package="dataset-fashion-mnist",
        debian_path="usr/share/datasets/fashion-mnist",
    ),
}


class FetchError(RuntimeError):
    """Every source of a data set failed; the message lists each source and why."""


def cache_dir() -> Path:
    """The per-user cache: ``$XDG_CACHE_HOME/calibnb``, else ``~/.cache/calibnb``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "calibnb"


def _is_complete(folder: Path, release: Release) -> bool:
    """Whether ``folder`` holds every file of ``release`` (presence only: loading verifies)."""
    return all((folder / name).is_file() for name in release.archive_md5)


def fetch(
    name: str,
    cache: str | os.PathLike | None = None,
    *,
    release: Release | None = None,
    progress: bool | None = None,
) -> Path:
    """Make sure ``name``'s files are in the cache and return their folder.

    Parameters
    ----------
    name : a key of :data:`RELEASES` (``"fashion-mnist"``).
    cache : the cache folder (default :func:`cache_dir`).
    release : the release to fetch instead of ``RELEASES[name]`` (tests use local mirrors).
    progress : show a progress bar per download (default: only on a terminal).

    Raises :class:`FetchError` naming every source tried and why it failed, and how to point
    ``CALIBNB_DATA`` at a copy; ``ValueError`` for a name without a release.
    """
    release = release if release is not None else _release(name)
    folder = (cache_dir() if cache is None else Path(cache)) / release.folder
    if _is_complete(folder, release):
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"{name}: cannot create the cache folder {folder}: {exc}") from exc
    failures = []
    for mirror in release.mirrors:
        log.info("%s: downloading from %s into %s", name, mirror, folder)
        try:
            for file, md5 in release.archive_md5.items():
                if not (folder / file).is_file():
                    download(mirror + file, folder / file, md5=md5, progress=progress)
            return folder
        except (OSError, ValueError) as exc:
            failures.append(f"{mirror}: {exc}")
            log.info("%s: %s", name, failures[-1])
    if release.debian_package:
        log.info("%s: fetching Debian's package %s with apt-get download", name, release.debian_package)
        try:
            extract_debian_package(release, folder, cache_root=folder.parent)
            return folder
        except (OSError, ValueError) as exc:
            failures.append(f"Debian package {release.debian_package}: {exc}")
    tried = "\n  ".join(failures)
    raise FetchError(
        f"could not fetch {name} into {folder}. Sources tried:\n  {tried}\n"
        f"Copy the files ({', '.join(release.archive_md5)}) into <dir>/{release.folder}/ "
        f"yourself and set CALIBNB_DATA=<dir>."
    )


def download(url: str, dest: Path, *, md5: str, progress: bool | None = None) -> None:
    """Download ``url`` to ``dest`` through a temporary file, renamed once its md5 is ``md5``.

    Raises ``OSError`` (unreachable, interrupted) or ``ValueError`` (checksum), leaving no file.
    """
    from .._progress import progress_bar

    tqdm = progress_bar()

    dest = Path(dest)
    with atomic_path(dest) as tmp:
        digest = hashlib.md5()
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response, open(tmp, "wb") as out:
                total = int(response.headers.get("Content-Length") or 0) or None
                bar = tqdm(total=total, unit="B", unit_scale=True, desc=dest.name,
                           disable=None if progress is None else not progress, leave=False)
                with bar:
                    while chunk := response.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
        except HTTPException as exc:  # e.g. IncompleteRead: the connection closed mid-file
            raise OSError(f"{url}: download interrupted ({exc!r})") from exc
        if digest.hexdigest() != md5:
            raise ValueError(f"{url}: md5 {digest.hexdigest()}, expected {md5}")


def extract_debian_package(release: Release, folder: Path, cache_root: Path) -> None:
    """Fetch ``release.debian_package`` with apt (lists kept in ``cache_root/apt``), unpack it
    with ``dpkg-deb -x`` and move its verified files into ``folder``.

    Raises ``OSError`` when apt or dpkg-deb is missing or fails, ``ValueError`` when a file's content md5 is not the published one.
    """
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise FileNotFoundError(f"{tool} not found (not a Debian-based system)")
    state = cache_root / "apt"
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    options = [
        "-o", f"Dir::State::Lists={state / 'lists'}",
        "-o", f"Dir::Cache={state / 'cache'}",
        "-o", "Debug::NoLocking=1",
        "-o", f"APT::Sandbox::User={_user()}",
        "-qq",
    ]
    with tempfile.TemporaryDirectory(dir=folder, prefix=".deb-") as work:
        _run(["apt-get", *options, "update"], cwd=work)
        _run(["apt-get", *options, "download", release.debian_package], cwd=work)
        debs = sorted(Path(work).glob(f"{release.debian_package}_*.deb"))
        if len(debs) != 1:
            raise FileNotFoundError(f"apt-get download left {len(debs)} .deb files, expected 1")
        unpacked = Path(work) / "root"
        _run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)], cwd=work)
        source = unpacked / release.debian_path
        for file, expected in release.content_md5.items():
            path = source / file
            if not path.is_file():
                raise FileNotFoundError(f"{release.debian_package} has no {release.debian_path}/{file}")
            actual = md5sum(path)
            if actual != expected:
                raise ValueError(f"{file} from {debs[0].name}: content md5 {actual}, expected {expected}")
        for file in release.content_md5:
            os.replace(source / file, folder / file)


def _release(name: str) -> Release:
    if name not in RELEASES:
        raise ValueError(f"name must be one of {sorted(RELEASES)} (data sets with a fetch step), got {name!r}")
    return RELEASES[name]


def _run(command: list[str], cwd: str) -> None:
    """Run a command quietly; ``OSError`` with the last lines of its output if it fails."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise OSError(f"`{command[0]} ... {command[-1]}` exited with {done.returncode}: {tail}")


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
