"""``python -m kvmath.engines.llamacpp.fit``: a thin alias of ``kvmath-fit llama-server ...``.

Everything after the module name is a llama-server line (``-m MODEL -c 32768 -ngl 99 ...``) plus the front
door's own options (``--card``, ``--device-memory``, ``--json``, ``--no-solve``); ``--model`` is llama.cpp's own
long form of ``-m``. The answer, the guards, the exit status (0 boots, 1 does not, 2 bad input) and the JSON
(bytes) are those of :mod:`kvmath.fit`.
"""

from __future__ import annotations

import sys


def usage() -> str:
    """The help text: this module's description, the launch line's rules and every flag it reads."""
    from . import launch

    flags = ", ".join(sorted(launch._FLAGS))
    return "\n".join([__doc__.strip(), "", launch.__doc__.strip(), "", f"Flags read: {flags}.",
                      "Front door: --card NAME, --device-memory SIZE, --json, --no-solve.",
                      "Exit status: 0 fits, 1 does not fit, 2 bad input, 3 internal error (a bug: please report it; --debug prints the traceback)."])


def run(argv=None) -> int:
    """``kvmath.fit.run(["llama-server", *argv])`` (unguarded: for tests and callers that own the streams);
    ``-h`` / ``--help`` prints :func:`usage`."""
    from ...fit import run as fit_run

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["-h"], ["--help"]):
        print(usage())
        return 0
    return fit_run(["llama-server", *argv])


def main(argv=None) -> int:
    """The module command: :func:`kvmath.fit.main` on ``llama-server`` + ``argv``."""
    from ...clitools import guarded

    return guarded("kvmath-fit", run, argv)


if __name__ == "__main__":
    sys.exit(main())
