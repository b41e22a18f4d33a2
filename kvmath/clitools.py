"""What every command line shares: its exit codes and its robustness to its environment (closed pipe,
full disk, locale, a crash).

Exit codes, the same in every command (``kvmath``, ``kvmath-fit``, ``python -m kvmath.engines.llamacpp.fit``):

- 0: it boots / fits, or the question was answered (``--help``, ``--calibration``, a derivation);
- 1: it does not boot (vLLM refuses it or runs out of memory; llama.cpp does not fit);
- 2: bad input: an argument, a file, a config, or an output that cannot be written (``> /dev/full``,
  ``>&-``); one line on stderr naming the problem and the valid choices;
- 3: an internal error of kvmath: one line asking for a report, the traceback only with ``--debug``.
"""

from __future__ import annotations

import os
import sys

OK, DOES_NOT_BOOT, BAD_INPUT, INTERNAL_ERROR = 0, 1, 2, 3
EXIT_CODES = {OK: "boots / fits, or answered", DOES_NOT_BOOT: "does not boot (refused, out of memory, does not fit)",
              BAD_INPUT: "bad input (one line on stderr)",
              INTERNAL_ERROR: "internal error of kvmath (one line asking for a report; --debug shows the traceback)"}
EXIT_HELP = ("Exit status: 0 boots (or answered), 1 does not boot, 2 bad input (one line on stderr), 3 internal "
             "error (please report it; --debug prints the traceback).")
"""The sentence every command's ``--help`` ends with."""

MAX_ARGS = 4096
"""Most command-line words a command reads after serving-only flags are set aside (a pasted ``vllm serve``
line has well under a hundred): argparse's option matching is quadratic in the count."""


def guarded(prog: str, run, argv=None) -> int:
    """Call ``run(argv)`` and map what happens to the exit codes above.

    ``--debug`` anywhere in ``argv`` (``sys.argv[1:]`` when None) is taken out and shows the traceback of an
    internal error. A :class:`kvmath.errors.KvMathError` that reaches here is bad input (one line, 2); any
    other exception is an internal error (one line, 3). A closed stdout (``| head``) ends quietly (0); a
    write error (``> /dev/full``) or a stdout closed at start (``>&-``) prints one line (2). A non-UTF-8
    terminal gets ASCII-safe output (``\\u`` escapes instead of an encoding error). Nothing here reads
    stdin, so a closed stdin (``<&-``) changes nothing.
    """
    from .errors import KvMathError
    from .validate import one_line

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    if debug:
        argv = [a for a in argv if a != "--debug"]
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.encoding and stream.encoding.lower().replace("-", "") not in ("utf8",):
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):  # pragma: no cover - a stream that cannot be reconfigured
            pass
    from . import hub

    hub.QUIET_CLIENT = True  # one line on failure: huggingface_hub's own warnings are not printed
    if sys.stdout is None:  # started with stdout closed (``>&-``): nothing could be printed
        _say(f"{prog}: error: cannot write the output (standard output is closed)")
        return BAD_INPUT
    try:
        code = run(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _mute_stdout()
        return OK
    except KvMathError as e:
        _say(f"{prog}: error: {one_line(e)}")
        return BAD_INPUT
    except SystemExit as e:
        if e.code in (0, None):  # --help: argparse printed it and exits 0; a full disk must not pass as read
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                _mute_stdout()
            except OSError as oe:
                if not _is_stdout_error(oe):
                    raise
                _say(f"{prog}: error: cannot write the output ({oe.strerror or oe})")
                _mute_stdout()
                return BAD_INPUT
        raise
    except KeyboardInterrupt:
        raise
    except OSError as e:
        if _is_stdout_error(e):
            _say(f"{prog}: error: cannot write the output ({e.strerror or e})")
            _mute_stdout()
            return BAD_INPUT
        return _internal(prog, e, debug)
    except BaseException as e:  # noqa: BLE001 - every other failure is kvmath's own, reported as one
        return _internal(prog, e, debug)


def _is_stdout_error(e: OSError) -> bool:
    """A failure to write stdout (full disk, device error), not a file kvmath itself opened."""
    import errno

    return getattr(e, "filename", None) is None and e.errno in (errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EBADF,
                                                                 errno.EDQUOT, errno.EFBIG, errno.EINVAL)


def _internal(prog: str, e: BaseException, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exception(e, file=sys.stderr)
    what = f"{type(e).__name__}: {e}".splitlines()[0][:200] if str(e) else type(e).__name__
    _say(f"{prog}: internal error ({what}); this is a bug in kvmath: please report it with the command line "
         f"(run again with --debug for the traceback)")
    return INTERNAL_ERROR


def _mute_stdout() -> None:
    """Point stdout at devnull, so Python's flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _say(line: str) -> None:
    """One line on stderr, if there is a stderr to write to."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def set_aside(argv: list[str], flags: dict) -> tuple[list[str], list[str]]:
    """``argv`` without the flags of ``flags`` ({flag: nargs}, nargs 0, 1 or ``"+"``) and their values, and
    the flags taken out (in order, repeated as given). One pass, linear in ``len(argv)``: argparse would
    match each repeated flag against every option position again (quadratic), so 8,000 ``--port 1`` pairs
    took 10.9 s. ``--flag=value`` counts as the flag with its value; ``--`` ends the options."""
    out: list[str] = []
    taken: list[str] = []
    i, n = 0, len(argv)
    while i < n:
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        name = a.split("=", 1)[0] if a.startswith("--") else a
        if name in flags:
            taken.append(name)
            nargs = flags[name]
            i += 1
            if "=" in a:
                continue
            if nargs == 1:
                i += 1
            elif nargs == "+":
                while i < n and not argv[i].startswith("-"):
                    i += 1
            continue
        out.append(a)
        i += 1
    return out, taken


def check_arg_count(prog: str, argv: list[str], limit: int = MAX_ARGS) -> None:
    """Refuse (KvMathError) more than ``limit`` command-line words before argparse reads them."""
    from .errors import KvMathError

    if len(argv) > limit:
        raise KvMathError(f"{len(argv):,} command-line words; {prog} reads at most {limit:,} (a launch line has "
                          "well under a hundred)")


def refuse_repeats(parser) -> None:
    """Make every option of ``parser`` that stores one value refuse a second, different value on the same
    command line (``--tp 2 --tp 4``): vLLM and llama.cpp keep the last silently, which hides a typo in a
    pasted line. The same value twice is accepted. Linear in the number of flags given."""
    import argparse

    stores = (argparse._StoreAction, argparse._StoreTrueAction, argparse._StoreFalseAction,
              argparse._StoreConstAction)
    for action in parser._actions:
        if not action.option_strings or type(action) not in stores:
            continue
        base = type(action)

        def call(self, p, namespace, values, option_string=None, _base=base):
            seen = namespace.__dict__.setdefault("_kvmath_seen", {})
            value = values if _base is argparse._StoreAction else self.const
            prev = seen.get(self.dest)
            if prev is not None and prev[1] != value:
                what = (f"{prev[0]} is given twice with different values" if prev[0] == option_string else
                        f"{prev[0]} and {option_string} set {self.dest} to different values")
                p.error(f"{what} ({_cut(prev[1])} and {_cut(value)}); give it once")
            seen[self.dest] = (option_string, value)
            _base.__call__(self, p, namespace, values, option_string)

        action.__class__ = type(f"Once{base.__name__}", (base,), {"__call__": call})


def _cut(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def drop_private(namespace) -> None:
    """Remove the bookkeeping :func:`refuse_repeats` leaves on a parsed namespace."""
    namespace.__dict__.pop("_kvmath_seen", None)


def print_message(message, file=None) -> None:
    """``argparse.ArgumentParser._print_message`` without its ``except OSError: pass``: argparse drops a failed
    write of ``--help`` and exits 0, so ``kvmath --help > /dev/full`` passed as read. Here the OSError reaches
    :func:`guarded`, which answers it in one line with exit 2."""
    if message:
        (file or sys.stderr).write(message)
        (file or sys.stderr).flush()
