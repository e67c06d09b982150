"""The fetch step (``make data``): both sources, checksums, interruption, an unusable cache.

No test needs the network: the mirrors are HTTP servers on the loopback address, and Debian's
archive is a fake ``apt-get`` on ``PATH`` that hands out a ``.deb`` built here with ``dpkg-deb``.
"""

import gzip
import hashlib
import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from calibnb.data import FetchError, cache_dir, fetch_dataset, load_dataset
from calibnb.data import fetch as fetching
from calibnb.data.fetch import RELEASES, Release, fetch

CONTENT = {"a-idx1-ubyte.gz": b"first file " * 1000, "b-idx1-ubyte.gz": b"second file " * 3000}
# Debian recompresses: same content, other gzip wrapper (mtime), so another archive md5
ARCHIVES = {name: gzip.compress(data, mtime=0) for name, data in CONTENT.items()}
DEBIAN_ARCHIVES = {name: gzip.compress(data, mtime=1) for name, data in CONTENT.items()}


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def release(*mirrors: str) -> Release:
    return Release(
        folder="toy-data",
        archive_md5={name: md5(data) for name, data in ARCHIVES.items()},
        content_md5={name: md5(data) for name, data in CONTENT.items()},
        mirrors=mirrors,
        debian_package="dataset-toy",
        debian_path="usr/share/datasets/toy",
    )


class Mirror:
    """A loopback HTTP server: ``files`` by name; ``truncate`` sends half of each body after a
    full Content-Length and closes the connection (an interrupted download)."""

    def __init__(self, files: dict[str, bytes], truncate: bool = False):
        self.files, self.truncate, self.requests = files, truncate, []
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                mirror.requests.append(name)
                if name not in mirror.files:
                    self.send_error(404)
                    return
                body = mirror.files[name]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if mirror.truncate else body)
                if mirror.truncate:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/data/"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirrors():
    started = []

    def start(files=ARCHIVES, truncate=False):
        started.append(Mirror(files, truncate))
        return started[-1]

    yield start
    for mirror in started:
        mirror.close()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/data/"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_downloads_every_file_checked_and_then_uses_the_cache(tmp_path, mirrors):
    mirror = mirrors()
    folder = fetch("toy", tmp_path, release=release(mirror.url), progress=False)
    assert folder == tmp_path / "toy-data"
    assert {name: (folder / name).read_bytes() for name in ARCHIVES} == ARCHIVES
    assert sorted(mirror.requests) == sorted(ARCHIVES)
    assert fetch("toy", tmp_path, release=release(mirror.url)) == folder
    assert len(mirror.requests) == len(ARCHIVES)  # the second fetch downloaded nothing


def test_an_unreachable_mirror_falls_through_to_the_next(tmp_path, mirrors):
    mirror = mirrors()
    folder = fetch("toy", tmp_path, release=release(closed_port_url(), mirror.url), progress=False)
    assert leftovers(folder) == sorted(ARCHIVES)


def test_a_checksum_mismatch_leaves_nothing_behind(tmp_path, mirrors, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no apt-get: the mirror is all
    tampered = {name: gzip.compress(data + b"!", mtime=0) for name, data in CONTENT.items()}
    mirror = mirrors(tampered)
    with pytest.raises(FetchError, match=rf"(?s){mirror.url}.*md5 .* expected {md5(ARCHIVES['a-idx1-ubyte.gz'])}"):
        fetch("toy", tmp_path, release=release(mirror.url), progress=False)
    assert leftovers(tmp_path / "toy-data") == []


def test_an_interrupted_download_leaves_nothing_and_a_later_run_completes(tmp_path, mirrors, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    broken = mirrors(truncate=True)
    with pytest.raises(FetchError, match="interrupted"):
        fetch("toy", tmp_path, release=release(broken.url), progress=False)
    assert leftovers(tmp_path / "toy-data") == []  # no half file a later run could trust
    good = mirrors()
    folder = fetch("toy", tmp_path, release=release(good.url), progress=False)
    assert {name: (folder / name).read_bytes() for name in ARCHIVES} == ARCHIVES


# --- Debian's package: a fake apt-get, a real .deb -------------------------------------------


def build_deb(tmp_path: Path, archives: dict[str, bytes]) -> Path:
    tree = tmp_path / "deb-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        "Package: dataset-toy\nVersion: 1.0-1\nArchitecture: all\n"
        "Maintainer: calibnb tests <tests@localhost>\nDescription: toy data set\n"
    )
    data = tree / "usr/share/datasets/toy"
    data.mkdir(parents=True)
    for name, body in archives.items():
        (data / name).write_bytes(body)
    deb = tmp_path / "dataset-toy_1.0-1_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(tree), str(deb)], check=True,
                   capture_output=True)
    return deb


def fake_apt(tmp_path: Path, deb: Path) -> Path:
    """A directory, to put first on ``PATH``, with an ``apt-get`` that logs its arguments and,
    for ``download``, copies ``deb`` into the current folder as the real one does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{tmp_path}/apt.log"\n'
        'for arg in "$@"; do last="$arg"; done\n'
        f'if [ "$last" = dataset-toy ]; then cp "{deb}" .; fi\n'
    )
    (bin_dir / "apt-get").chmod(0o755)
    return bin_dir


def test_debian_package_when_no_mirror_answers(tmp_path, monkeypatch):
    bin_dir = fake_apt(tmp_path, build_deb(tmp_path, DEBIAN_ARCHIVES))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cache = tmp_path / "cache"
    folder = fetch("toy", cache, release=release(closed_port_url()), progress=False)
    assert {name: (folder / name).read_bytes() for name in CONTENT} == DEBIAN_ARCHIVES
    assert leftovers(folder) == sorted(CONTENT)  # the unpacked package is gone
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert [call.split()[-1] for call in calls] == ["update", "dataset-toy"]
    for call in calls:  # apt's lists live in the cache: the system's are neither read nor updated
        assert f"Dir::State::Lists={cache}/apt/lists" in call


def test_debian_package_with_other_content_is_refused(tmp_path, monkeypatch):
    other = {name: gzip.compress(b"not it") for name in CONTENT}
    bin_dir = fake_apt(tmp_path, build_deb(tmp_path, other))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(FetchError, match="(?s)Debian package dataset-toy:.*content md5"):
        fetch("toy", tmp_path / "cache", release=release(closed_port_url()), progress=False)
    assert leftovers(tmp_path / "cache" / "toy-data") == []


def test_when_every_source_fails_the_error_names_each_and_calibnb_data(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    url = closed_port_url()
    with pytest.raises(FetchError) as info:
        fetch("toy", tmp_path, release=release(url), progress=False)
    message = str(info.value)
    assert url in message and "Debian package dataset-toy: apt-get not found" in message
    assert "CALIBNB_DATA" in message and "a-idx1-ubyte.gz" in message


def test_a_cache_that_cannot_be_created_is_named(tmp_path, mirrors):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache should be")
    with pytest.raises(FetchError, match=f"cannot create the cache folder {blocker}/toy-data"):
        fetch("toy", blocker, release=release(mirrors().url), progress=False)


# --- where the cache is, and how load_dataset uses it ----------------------------------------


def test_cache_dir_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "calibnb"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "calibnb"


def test_fashion_mnist_release_checks_the_published_archives():
    """The archive md5s are torchvision's ``FashionMNIST.resources``; the content md5s are what
    ``load_dataset`` verifies, so a Debian copy and a downloaded copy are held to one standard."""
    fashion = RELEASES["fashion-mnist"]
    assert fashion.archive_md5 == {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    }
    assert set(fashion.content_md5) == set(fashion.archive_md5)
    assert fashion.debian_package == "dataset-fashion-mnist"


def test_fetch_dataset_uses_a_copy_it_finds_and_fetches_into_the_cache_otherwise(tmp_path, monkeypatch):
    found = tmp_path / "mine" / "fashion-mnist"
    found.mkdir(parents=True)
    for name in RELEASES["fashion-mnist"].archive_md5:
        (found / name).write_bytes(b"")
    monkeypatch.setenv("CALIBNB_DATA", str(tmp_path / "mine"))
    assert fetch_dataset("fashion-mnist") == found  # found: nothing fetched
    monkeypatch.delenv("CALIBNB_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(fetching, "RELEASES", {"fashion-mnist": release(closed_port_url())})
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(FetchError, match=f"into {tmp_path}/xdg/calibnb/toy-data"):
        fetch_dataset("fashion-mnist")


def test_load_dataset_searches_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CALIBNB_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}/calibnb/fashion-mnist"):
        load_dataset("fashion-mnist", root=tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["mnist1d", "cifar10", "imagenet", "imagenet21k"])
def test_fetch_dataset_refuses_what_it_cannot_fetch(name, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CALIBNB_DATA", raising=False)
    unfetchable = name in ("cifar10", "imagenet")
    error = FileNotFoundError if unfetchable else ValueError
    with pytest.raises(error, match="no fetch step" if unfetchable else "name"):
        fetch_dataset(name, root=tmp_path / "nowhere")


def test_the_command_line_prints_an_error_not_a_traceback(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("CALIBNB_DATA", None)
    done = subprocess.run([sys.executable, "-m", "calibnb", "fetch", "cifar10"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: cifar10: could not find") and "Traceback" not in done.stderr
