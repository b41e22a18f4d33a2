"""``make sglang-wheels``: the SGLang release wheels the SGLang oracle tests load code from
(tests/test_sglang_oracle.py, test_sglang_defaults.py, test_sglang.py), each pinned by its sha256.

A wheel already in ``.cache/sglang-wheels`` is checked against its hash (a mismatch stops the build, naming the
file); a missing one is fetched with ``pip download --no-deps --require-hashes`` from a one-line requirement file,
so pip refuses any other file. The hashes are those PyPI lists for each file (pip checked them against the
index's ``#sha256=`` when the files were first fetched, 2026-12-03). 0.5.23 ships compiled code: its pin is the
CPython 3.11 manylinux_2_34 x86_64 wheel, the build the tests run on.

    python tools/sglang_wheels.py [--dest .cache/sglang-wheels]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WHEELS = {  # version -> (file name, sha256)
    "0.4.3": ("sglang-0.4.3-py3-none-any.whl", "2ce4a5385a0319fe70c2087b3def17ccb174deab1be1d4448eed430b3066d60b"),
    "0.4.3.post4": ("sglang-0.4.3.post4-py3-none-any.whl",
                    "64b43542f1ac64f760aab0baaed02591a3d2b548ed80b46676cb65070ce5cddb"),
    "0.4.4": ("sglang-0.4.4-py3-none-any.whl", "c6f4fc174a67ef048917b0d97ad99b0c52d6019d7abe370f3c5df70716ca3011"),
    "0.4.7": ("sglang-0.4.7-py3-none-any.whl", "c897284d8ca4fe7f2906a89775ad9609666d369ed70aded908722630ece34a54"),
    "0.4.8.post1": ("sglang-0.4.8.post1-py3-none-any.whl",
                    "0c68bd3b461a910f1b135d64df7eb967ab8be73a7f17c9859c957d11c140d0e1"),
    "0.4.10": ("sglang-0.4.10-py3-none-any.whl", "93b4eaca8f2815477e3a4005639cda095f24f1f7435b5898a62acb48c327bf2b"),
    "0.5.4.post1": ("sglang-0.5.4.post1-py3-none-any.whl",
                    "ed919059d777f4c3a1e029239c16969188623e847ec0b9c23e2d4856e07f70f4"),
    "0.5.6": ("sglang-0.5.6-py3-none-any.whl", "c32b6a5bafcda41c2f299ed4a1fbe8401946076b4e010fe8feb5b8a9712bf66b"),
    "0.5.9": ("sglang-0.5.9-py3-none-any.whl", "8a936c4d25fea605f44254e533cff2144c73ceffbc1f8738aba393461bbb64d1"),
    "0.5.23": ("sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
               "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"),
}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ensure(dest: Path) -> list[str]:
    """Each pinned wheel in ``dest``, checked or fetched; the lines said. Exits naming a file that does not match."""
    dest.mkdir(parents=True, exist_ok=True)
    said = []
    for version, (name, digest) in WHEELS.items():
        path = dest / name
        if not path.is_file():
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
                req.write(f"sglang=={version} --hash=sha256:{digest}\n")
            said.append(f"== fetching sglang {version} (pip download --no-deps --require-hashes)")
            subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "-q", "--no-deps",
                            "--require-hashes", "-r", req.name, "-d", str(dest)], check=True)
            Path(req.name).unlink()
        if not path.is_file() or sha256(path) != digest:
            sys.exit(f"sglang_wheels: {path} does not match its pinned sha256 {digest} (tools/sglang_wheels.py); "
                     "remove it to fetch it again")
    return said


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=str(ROOT / ".cache" / "sglang-wheels"))
    a = ap.parse_args(argv)
    for line in ensure(Path(a.dest)):
        print(line)
    print(f"== {len(WHEELS)} SGLang wheels in {a.dest}, each matching its pinned sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
