"""The build fetches nothing unpinned (issue #25): both locks pin every file by its sha256 and are installed
with ``--require-hashes``; the vendored JavaScript is checked against the integrity npm's registry gives.

Offline: the locks and the Makefile are read as text; the integrity check runs on tarballs written here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import book_assets  # noqa: E402


def requirements(path: Path) -> dict[str, tuple[str, list[str]]]:
    """canonical name -> (version, sha256 list) of a hashed requirements file (``-r`` lines skipped)."""
    text = path.read_text().replace("\\\n", " ")
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-r "):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})*)", line)
        assert m, f"{path.name}: not a hashed pin: {line[:120]!r}"
        out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = (m.group(2), re.findall(r"[0-9a-f]{64}", m.group(3)))
    return out


BOOK = requirements(ROOT / "requirements-book.lock")
TEST = requirements(ROOT / "requirements-test.lock")


def test_every_pin_has_a_hash():
    for name, (version, hashes) in {**BOOK, **TEST}.items():
        assert hashes, f"{name}=={version} has no --hash"
    assert len(BOOK) > 100 and len(TEST) > 10


def test_the_locks_hold_the_in_files_pins():
    for src, lock in (("requirements-book.in", BOOK), ("requirements-test.in", TEST)):
        for line in (ROOT / src).read_text().splitlines():
            m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
            if m:
                name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
                assert lock.get(name, (None,))[0] == m.group(2), (src, line)


def test_kvmath_core_dependencies_are_in_the_book_set():
    assert BOOK["huggingface-hub"][0] == "2.4.0"
    assert "platformdirs" in BOOK and "gguf" in BOOK
    for test_only in ("torch", "transformers", "pytest", "hypothesis", "playwright"):
        assert test_only not in BOOK and test_only in TEST
    assert not set(BOOK) & set(TEST), "the test lock repeats book pins"
    assert "-r requirements-book.lock" in (ROOT / "requirements-test.lock").read_text().splitlines()


def test_torch_is_the_public_version():
    # torch==2.13.0 matches the local 2.13.0+cpu build pip finds in /opt/wheels (PEP 440 local versions)
    assert "+" not in TEST["torch"][0]


def test_makefile_installs_with_require_hashes():
    text = (ROOT / "Makefile").read_text()
    installs = [line for line in text.splitlines() if " install " in line and "-r $(1)" in line]
    assert installs and all("--require-hashes" in line for line in installs), installs
    assert "tools/lock.py" in text


# --- npm integrity

def _tarball(path: Path, body: bytes) -> str:
    import io

    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("package/index.js")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def test_check_integrity_accepts_the_recorded_digest_and_refuses_another(tmp_path):
    good = tmp_path / "pkg-1.0.0.tgz"
    integrity = _tarball(good, b"console.log(1)")
    book_assets.check_integrity(good, integrity)  # no exit
    bad = tmp_path / "pkg-1.0.1.tgz"
    _tarball(bad, b"console.log(2)")
    with pytest.raises(SystemExit, match="does not match its recorded integrity"):
        book_assets.check_integrity(bad, integrity)
    with pytest.raises(SystemExit, match="not an integrity string"):
        book_assets.check_integrity(good, "md5-abc")


def test_every_npm_package_has_a_recorded_integrity():
    table = json.loads(book_assets.INTEGRITY_FILE.read_text())
    for name, version in book_assets.NPM.items():
        value = book_assets.expected_integrity(name, version)
        assert value == table[f"{name}@{version}"]
        assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", value), value
    with pytest.raises(SystemExit, match="no recorded integrity"):
        book_assets.expected_integrity("left-pad", "9.9.9")


def test_a_tampered_cached_tarball_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(book_assets, "CACHE", tmp_path)
    name, version = "requirejs", book_assets.NPM["requirejs"]
    _tarball(tmp_path / book_assets._tarball_name(name, version), b"not requirejs")
    with pytest.raises(SystemExit, match="does not match its recorded integrity"):
        book_assets.npm_tarball(name, version)


# --- the SGLang wheels the oracle tests load code from

def test_no_unhashed_pip_download_in_the_makefile():
    # `make test` fetched `pip download --no-deps sglang==V` by version alone, and the oracle tests run that code
    recipes = [line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("\t")]
    assert not [line for line in recipes if " download " in line], "a pip download outside tools/sglang_wheels.py"
    assert any("tools/sglang_wheels.py" in line for line in recipes)


def test_a_tampered_cached_wheel_is_refused(tmp_path, monkeypatch):
    import sglang_wheels

    dest = tmp_path / "wheels"
    dest.mkdir()
    body = b"not the released wheel"
    monkeypatch.setattr(sglang_wheels, "WHEELS", {"0.0.1": ("sglang-0.0.1-py3-none-any.whl",
                                                            hashlib.sha256(body).hexdigest())})
    (dest / "sglang-0.0.1-py3-none-any.whl").write_bytes(body)
    assert sglang_wheels.ensure(dest) == []  # the pinned bytes: checked, nothing fetched
    (dest / "sglang-0.0.1-py3-none-any.whl").write_bytes(body + b"!")
    with pytest.raises(SystemExit, match="does not match its pinned sha256"):
        sglang_wheels.ensure(dest)


def test_every_sglang_wheel_is_pinned_by_its_file_and_hash():
    import sglang_wheels

    assert len(sglang_wheels.WHEELS) >= 10
    for v, (name, digest) in sglang_wheels.WHEELS.items():
        assert name.startswith(f"sglang-{v}-") and name.endswith(".whl"), name
        assert re.fullmatch(r"[0-9a-f]{64}", digest), (v, digest)
