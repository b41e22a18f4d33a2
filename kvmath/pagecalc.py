"""The command lines as a function: what ``window.kvmathQuery(argv)`` runs in the reader's browser.

The book's calculator (``kvmath.book.calculator``) runs kvmath in the page through Pyodide and calls
:func:`run` with the argv a reader would type; the same function runs natively, so the page's answer
and the native command's can be compared byte for byte (tests/test_pagecalc.py).

Nothing here imports numpy, gguf, pandas or huggingface_hub: a query pulls in only what the command
itself imports for those arguments.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from importlib import import_module

# The console scripts of pyproject.toml's [project.scripts], program name -> "module:function".
# tests/test_pagecalc.py checks that the two agree.
PROGRAMS: dict[str, str] = {
    "kvmath": "kvmath.cli:main",
    "kvmath-fit": "kvmath.fit:main",
}

# argparse wraps --help at shutil.get_terminal_size(), which reads $COLUMNS first and falls back to
# 80 columns when stdout is not a terminal (a pipe, as here and in the page).
_COLUMNS = "80"


def _exit_code(code) -> tuple[int, str | None]:
    """``sys.exit(code)``'s process status and the message it prints (Python's own rules)."""
    if code is None:
        return 0, None
    if isinstance(code, bool):
        return int(code), None
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else (256 + code) & 0xFF, None
    return 1, str(code)


def _utf8(text: str) -> bool:
    """True when ``text`` can be set in the environment (no lone surrogate: os.environ encodes it as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def run(argv, env: dict | None = None) -> dict:
    """Run one command line as the console script would and return ``{"stdout": str, "stderr": str,
    "exit_code": int}``.

    ``argv`` is the whole command line as a list of strings, its first element a program of
    :data:`PROGRAMS` (``kvmath`` or ``kvmath-fit``); ``env`` holds environment variables set for this
    call only (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, ...). ``sys.argv`` is the given argv during the call
    (argparse names the program from it) and ``$COLUMNS`` is 80 unless ``env`` sets it, as for a
    command whose output goes to a pipe. The exit code follows ``sys.exit``'s rules (the function's
    return value, or a ``SystemExit``'s code); an exception the command does not handle is printed as
    Python prints it and gives 1. An argv that is not a list of strings naming a known program gives
    one line on stderr naming the valid programs, exit 2; so does an ``env`` that is not a dict of string names.
    Never raises (except KeyboardInterrupt).
    """
    out, err = io.StringIO(), io.StringIO()
    if (not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv)):
        return {"stdout": "", "stderr": "kvmathQuery: argv must be a non-empty list of strings, the first "
                f"the program ({', '.join(PROGRAMS)})\n", "exit_code": 2}
    prog = argv[0]
    if prog not in PROGRAMS:
        shown = prog if len(prog) <= 60 else prog[:60] + "..."
        return {"stdout": "", "stderr": f"kvmathQuery: unknown program {shown!r}; valid: "
                f"{', '.join(PROGRAMS)}\n", "exit_code": 2}
    if env is not None and (not isinstance(env, dict)
                            or not all(isinstance(k, str) and k and "=" not in k and "\0" not in k for k in env)
                            or not all(isinstance(v, (str, int, float)) and "\0" not in str(v) for v in env.values())
                            or not all(_utf8(k) and _utf8(str(v)) for k, v in env.items())):
        # os.environ takes str names only (a name with '=' or NUL cannot be set): refused here, not raised
        return {"stdout": "", "stderr": "kvmathQuery: env must be a dict of variable names (strings without '=') to "
                "string or number values (no NUL)\n", "exit_code": 2}
    module, func = PROGRAMS[prog].split(":")
    env = {"COLUMNS": _COLUMNS, **(env or {})}
    saved_env = {k: os.environ.get(k) for k in env}
    saved_argv = sys.argv
    try:
        os.environ.update({k: str(v) for k, v in env.items()})
        sys.argv = list(argv)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code, message = _exit_code(getattr(import_module(module), func)(list(argv[1:])))
            except SystemExit as e:
                code, message = _exit_code(e.code)
            except KeyboardInterrupt:
                raise
            except BaseException:  # noqa: BLE001 - printed as the interpreter would, exit 1
                traceback.print_exc()
                code, message = 1, None
            if message is not None:
                print(message, file=sys.stderr)
    finally:
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"stdout": out.getvalue(), "stderr": err.getvalue(), "exit_code": code}


def run_json(argv_json: str, env_json: str = "{}") -> str:
    """:func:`run` with JSON in and out (the page passes strings across the JavaScript / Python border)."""
    import json

    def refuse(what: str) -> str:
        return json.dumps({"stdout": "", "stderr": f"kvmathQuery: {what}\n", "exit_code": 2})

    if not isinstance(argv_json, str) or not isinstance(env_json, (str, type(None))):
        return refuse("argv and env must be JSON text (a list of strings, an object of variables)")
    try:
        argv, env = json.loads(argv_json), json.loads(env_json or "{}")
    except (ValueError, RecursionError) as e:
        return refuse(f"argv or env is not JSON of at most a few levels ({str(e)[:80]})")
    if not isinstance(env, dict):
        return refuse("env must be a JSON object of variable names to values")
    return json.dumps(run(argv, env))
