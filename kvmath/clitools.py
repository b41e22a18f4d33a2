"""What both command lines share: robustness to their environment (closed pipe, full disk, locale)."""

from __future__ import annotations

import os
import sys


def guarded(prog: str, run, argv=None) -> int:
    """Call ``run(argv)``; a closed stdout (``| head``) ends quietly, a write error (``> /dev/full``)
    prints one line and exits 1, a non-UTF-8 terminal gets ASCII-safe output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.encoding and stream.encoding.lower().replace("-", "") not in ("utf8",):
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):  # pragma: no cover - a stream that cannot be reconfigured
            pass
    try:
        code = run(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at devnull so that flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as e:
        try:
            sys.stderr.write(f"{prog}: error: cannot write the output ({e.strerror or e})\n")
        except OSError:
            pass
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 1
