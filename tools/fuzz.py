"""Long GGUF fuzz run: the cases of tests/test_gguf_fuzz.py with many more examples, counted.

    python tools/fuzz.py                 # 50,000 examples (split over the three mutation kinds)
    python tools/fuzz.py --examples 5000

Each case is a small valid ``.gguf`` corrupted one way (random byte edits; huge lengths / counts /
types in the header; bad metadata values) and read with ``kvmath.model.gguf.read_gguf``. Printed:
cases run, how many were read and how many refused with KvMathError, exceptions other than
KvMathError (by type, with a sample), cases over 2 s (a 10 s alarm ends a case that hangs), and
NaN / negative figures or multi-line messages. Exit status 1 when any of those is non-zero.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import test_gguf_fuzz as F  # noqa: E402
from kvmath import KvMathError  # noqa: E402
from kvmath.model.gguf import read_gguf  # noqa: E402

KINDS = {"byte edits": (F.byte_edits, 0.4), "huge lengths/counts": (F.field_edits, 0.3),
         "bad metadata values": (F.key_edits, 0.3)}
HANG_SECONDS = 10


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=50_000, help="total examples (default 50,000)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default random)")
    args = ap.parse_args(argv)

    counts: collections.Counter = collections.Counter()
    others: dict[str, str] = {}
    problems: list[str] = []
    slowest = [0.0]
    tmp = tempfile.TemporaryDirectory()
    path = Path(tmp.name) / "case.gguf"
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        signal.signal(signal.SIGALRM, _alarm)

    def one(kind: str, data: bytes) -> None:
        counts["cases"] += 1
        counts[f"cases: {kind}"] += 1
        path.write_bytes(data)
        t0 = time.perf_counter()
        if use_alarm:
            signal.alarm(HANG_SECONDS)
        try:
            model = read_gguf(path)
            figs = F.figures(model)
        except KvMathError as e:
            counts["refused (KvMathError)"] += 1
            msg = str(e)
            if not msg.strip() or "\n" in msg:
                counts["KvMathError not one line"] += 1
                problems.append(f"message not one line: {msg[:200]!r}")
        except Hang:
            counts["hangs (> 10 s)"] += 1
            problems.append(f"hang ({kind}, {len(data)} bytes)")
        except BaseException as e:  # noqa: BLE001 - counting is the point
            if isinstance(e, KeyboardInterrupt):
                raise
            name = type(e).__name__
            counts["exceptions other than KvMathError"] += 1
            counts[f"  {name}"] += 1
            others.setdefault(name, f"{kind}: {str(e)[:200]}")
        else:
            counts["read"] += 1
            bad = F.bad_figures(figs)
            if bad:
                counts["NaN / negative figures"] += 1
                problems.append(f"bad figures ({kind}): {bad[:5]}")
        finally:
            if use_alarm:
                signal.alarm(0)
        dt = time.perf_counter() - t0
        slowest[0] = max(slowest[0], dt)
        if dt > F.CASE_SECONDS:
            counts["cases over 2 s"] += 1

    start = time.perf_counter()
    for kind, (strategy, share) in KINDS.items():
        n = max(1, int(args.examples * share))
        cfg = settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
                       suppress_health_check=list(HealthCheck), derandomize=False)

        def make(kind=kind, strategy=strategy):
            @cfg
            @given(data=strategy())
            def run(data):
                one(kind, data)

            return run

        run = make()

        if args.seed is not None:
            from hypothesis import seed

            run = seed(args.seed)(run)
        run()
    elapsed = time.perf_counter() - start

    keys = ["cases"] + [f"cases: {k}" for k in KINDS] + [
        "read", "refused (KvMathError)", "exceptions other than KvMathError",
        *sorted(k for k in counts if k.startswith("  ")),
        "cases over 2 s", "hangs (> 10 s)", "NaN / negative figures", "KvMathError not one line"]
    width = max(len(k) for k in keys)
    print(f"GGUF fuzz: {counts['cases']:,} cases in {elapsed:.1f} s (slowest case {slowest[0] * 1000:.1f} ms)")
    for k in keys:
        print(f"  {k:<{width}}  {counts.get(k, 0):>8,}")
    for name, sample in others.items():
        print(f"  sample {name}: {sample}")
    for p in problems[:20]:
        print(f"  problem: {p}")
    bad = (counts["exceptions other than KvMathError"] + counts["cases over 2 s"] + counts["hangs (> 10 s)"]
           + counts["NaN / negative figures"] + counts["KvMathError not one line"])
    tmp.cleanup()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
