#!/usr/bin/env python3
"""Time a full book build and each chapter's execution, against the 90 s target.

A full build is what ``make book`` runs after the assets: ``python -m kvmath.book.model_chapter --book``
(every model chapter written from the template and executed, in parallel) and then
``jb build . --all -W -n --keep-going`` (the MyST chapters executed by myst-nb, everything rendered),
into a temporary ``--path-output`` (the working tree's ``_build`` is left alone). Prints the full-build
wall time (both steps), each step, and per chapter the execution time ("<file>: Executed notebook in N
seconds", from either step). Prints figures only; exits non-zero only if a step fails.

Usage: ``make bench`` (or ``.venv/bin/python tools/bench_book.py [--keep DIR]``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 90.0
EXECUTED = re.compile(r"^(?P<path>\S+?\.(?:md|ipynb)): Executed notebook in (?P<s>[\d.]+) seconds", re.M)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    parser.add_argument("--target", type=float, default=TARGET_S, help="seconds (default 90)")
    args = parser.parse_args(argv)

    bin_dir = Path(sys.executable).parent
    jb = bin_dir / "jb"
    if not jb.exists():
        sys.exit(f"{jb} not found: run with the venv's python (make bench)")
    env = dict(os.environ)
    env.update(
        KVMATH_BOOK_BUILD="1",
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )

    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "tools" / "book_assets.py")], cwd=ROOT, env=env, check=True)
    t_assets = time.perf_counter() - t0
    t0 = time.perf_counter()
    chapters_run = subprocess.run([sys.executable, "-m", "kvmath.book.model_chapter", "--book"], cwd=ROOT, env=env,
                                  capture_output=True, text=True)
    t_chapters = time.perf_counter() - t0
    if chapters_run.returncode != 0:
        print(chapters_run.stdout[-3000:], chapters_run.stderr[-3000:])
        return chapters_run.returncode

    out = args.keep or Path(tempfile.mkdtemp(prefix="kvmath-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(jb), "build", ".", "-W", "-n", "--keep-going", "--path-output", str(out)]
    print("bench_book:", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log = chapters_run.stdout + proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    full = t_chapters + wall

    chapters = [(Path(m["path"]), float(m["s"])) for m in EXECUTED.finditer(log)]
    executed = sum(s for _, s in chapters)

    print()
    print(f"assets step               {t_assets:8.1f} s   (not counted: vendoring, a no-op once done)")
    print(f"full book build           {full:8.1f} s   target {args.target:.0f} s: "
          f"{'within' if full <= args.target else 'OVER'} ({full / args.target:.0%} of target), "
          f"{len(chapters)} chapters on {os.cpu_count()} CPUs")
    print(f"  model chapters          {t_chapters:8.1f} s   (written from the template and executed in parallel)")
    print(f"  jb build (force)        {wall:8.1f} s   (MyST chapters executed, every page rendered)")
    print(f"  chapter execution, sum  {executed:8.1f} s   (CPU-side sum over chapters; parallel steps overlap)")
    print()
    if chapters:
        width = max(len(str(_rel(p))) for p, _ in chapters)
        print(f"{'chapter':<{width}}  execution")
        for path, s in sorted(chapters, key=lambda c: -c[1]):
            print(f"{str(_rel(path)):<{width}}  {s:7.2f} s")
    print()
    print(f"build log: {out / 'build.log'}")
    if proc.returncode != 0:
        print(f"\njb build FAILED (exit {proc.returncode}); log tail:\n" + "\n".join(log.splitlines()[-40:]))
        return proc.returncode
    if args.keep is None:
        shutil.rmtree(out / "_build", ignore_errors=True)
    return 0


def _rel(p: Path) -> Path:
    try:
        return p.resolve().relative_to(ROOT)
    except ValueError:
        return p


if __name__ == "__main__":
    sys.exit(main())
