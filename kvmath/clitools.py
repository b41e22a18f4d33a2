"""What both command lines share: robustness to their environment (closed pipe, full disk, locale)."""

from __future__ import annotations

import os
import sys


def guarded(prog: str, run, argv=None) -> int:
    """Call ``run(argv)``; a closed stdout (``| head``) ends quietly, a write error (``> /dev/full``) or
    a stdout closed at start (``>&-``) prints one line and exits 1, a non-UTF-8 terminal gets
    ASCII-safe output (``\\u`` escapes instead of an encoding error). Nothing here reads stdin, so a
    closed stdin (``<&-``) changes nothing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.encoding and stream.encoding.lower().replace("-", "") not in ("utf8",):
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):  # pragma: no cover - a stream that cannot be reconfigured
            pass
    if sys.stdout is None:  # started with stdout closed (``>&-``): nothing could be printed
        _say(f"{prog}: error: cannot write the output (standard output is closed)")
        return 1
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
        _say(f"{prog}: error: cannot write the output ({e.strerror or e})")
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 1


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr to write to."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
