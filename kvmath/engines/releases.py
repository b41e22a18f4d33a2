"""Releases as data: one frozen record of named rule switches per engine release (or build), one table.

An engine's rules read switches off the record of the chosen release (``release.block_rounding``,
``release.mem_fraction_eras`` ...) instead of testing version numbers inline, so what changed between two
releases is the difference of two records, and every message about the covered range (the releases read,
"newer than the newest read", "older than the oldest read") is generated here from the one table.

A table holds the releases whose source was read, each with where its rules were read (``source``). A
version between two read releases takes the rules of the newest read release not after it: a release
record stands for itself and the unread releases after it until the next record (that is the design
assumption every table makes, and its ``covers`` text says so). A version before the oldest record is
refused; one after the newest takes the newest record with a note, or is refused when the table says
newer releases are not to be assumed (``allow_newer=False``).

Versions are ``MAJOR.MINOR[.PATCH]`` with optional ``v`` prefix and ``.postN`` / ``rcN`` suffix (PEP 440's
public releases as engines publish them on PyPI), or llama.cpp's ``bNNNN`` build numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import lru_cache

from ..errors import KvMathError, choices

# ASCII digits only (re.ASCII): a release is spelled with them (PEP 440, llama.cpp's bNNNN tags), and Python's
# \d and int() would read Arabic-Indic or fullwidth digits ("٠.٢٤.٠") as a real release
_SEMVER = re.compile(r"^[vV]?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?:\.?(?:post|rc|a|b|dev)\d{0,4})?$", re.ASCII)
_BUILD = re.compile(r"^[bB](\d{1,6})$", re.ASCII)
_PRE = re.compile(r"\d\.?(?:rc|a|b|dev)\d{0,4}$", re.ASCII)
"""A pre-release suffix (``0.24.0rc1``, ``0.8.5.dev169``): read as its final release, with a note."""


@lru_cache(maxsize=512)
def parse_version(text: str, *, what: str = "version") -> tuple[int, ...]:
    """``"0.11.2"`` -> ``(0, 11, 2)``, ``"v0.5"`` -> ``(0, 5, 0)``, ``"b8190"`` -> ``(8190,)``.

    Raises KvMathError naming ``what`` for anything else (an empty string, ``"latest"``, a 5,000-digit
    number)."""
    if not isinstance(text, str) or not text.strip() or not text.isprintable():  # a pasted newline is not a version
        raise KvMathError(f"{what} must look like 0.11.2 (or bNNNN for a llama.cpp build), got {str(text)[:40]!r}")
    t = text.strip()
    m = _SEMVER.match(t)
    if m:
        return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    m = _BUILD.match(t)
    if m:
        return (int(m.group(1)),)
    raise KvMathError(f"{what} must look like 0.11.2 (or bNNNN for a llama.cpp build), got {t[:40]!r}")


def release_key(text: str, *, what: str = "version") -> tuple[int, ...]:
    """``parse_version`` plus the ``.postN`` number as a fourth part for ``MAJOR.MINOR.PATCH`` versions
    (``"0.4.3.post4"`` -> ``(0, 4, 3, 4)``, ``"0.4.3"`` -> ``(0, 4, 3, 0)``): post releases can change rules (SGLang
    0.4.3.post4 logs ``#tokens``, 0.4.3 does not), so a table may hold both. Build numbers stay ``(N,)``."""
    base = parse_version(text, what=what)
    if len(base) == 1:
        return base
    m = re.search(r"post([0-9]{1,4})$", text.strip())
    return base + (int(m.group(1)) if m else 0,)


@dataclass(frozen=True)
class Release:
    """One release whose rules were read. Engines subclass it with their own named switches.

    - ``name``: the release as its engine spells it (``"0.11.0"``, ``"b8190"``);
    - ``source``: where the rules were read (the files and tag / commit), cited by every answer.
    """

    name: str
    source: str

    @property
    def key(self) -> tuple[int, ...]:
        return release_key(self.name)

    def switches(self) -> dict:
        """The record's rule switches by name (everything but ``name`` and ``source``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("name", "source")}


@dataclass(frozen=True)
class Chosen:
    """A release picked for a requested version: the record whose rules apply, and a note when the
    requested version is not itself a read release (empty when it is)."""

    requested: str
    release: Release
    note: str = ""


class ReleaseTable:
    """The read releases of one engine, oldest first; ``default`` is the newest unless given.

    ``flag`` is the option that chooses a release (``--vllm-version``), used in messages. ``allow_newer``: True
    takes a version past the newest read with the newest's rules (and a note); False refuses it; ``"patch"``
    takes only a patch release of the newest line read (vLLM 0.34.2 of 0.34.0) and refuses a newer line."""

    def __init__(self, engine: str, releases, *, flag: str, default: str | None = None, allow_newer: bool | str = True):
        rel = sorted(releases, key=lambda r: r.key)
        if not rel:
            raise ValueError(f"{engine}: a release table needs at least one release")
        keys = [r.key for r in rel]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{engine}: two release records for one version")
        self.engine, self.flag, self.allow_newer = engine, flag, allow_newer
        self.releases: tuple[Release, ...] = tuple(rel)
        self.by_name = {r.name: r for r in rel}
        self.default = self.by_name[default] if default else rel[-1]

    @property
    def oldest(self) -> Release:
        return self.releases[0]

    @property
    def newest(self) -> Release:
        return self.releases[-1]

    @property
    def covers(self) -> str:
        """The covered range in words, the one text every header, note and error uses."""
        names = [r.name for r in self.releases]
        return (f"{self.engine} releases {names[0]}-{names[-1]} (rules read at {choices(names)}; a release "
                f"between two of these takes the rules of the older one)")

    def choose(self, version: str | None) -> Chosen:
        """The record for ``version`` (None: the default release, with a note saying so).

        Raises KvMathError for a malformed version, one older than the oldest read, or (when the table does
        not allow newer) one newer than the newest read; the message names the covered range."""
        if version is None:
            return Chosen(self.default.name, self.default,
                          f"{self.flag} not given: {self.engine} {self.default.name}'s rules (the newest read)"
                          if self.default is self.newest else f"{self.flag} not given: {self.default.name}'s rules")
        key = release_key(version, what=self.flag)
        if len(key) != len(self.oldest.key):
            raise KvMathError(f"{self.flag} {version[:40]!r} is not a {self.engine} release; {self.covers}")
        if key < self.oldest.key:
            raise KvMathError(f"{self.flag} {version[:40]} is older than the oldest {self.engine} release read "
                              f"({self.oldest.name}); {self.covers}")
        pre = _PRE.search(version.strip())
        if pre is not None and key > self.newest.key and self.allow_newer is not True:
            raise KvMathError(f"{self.flag} {version[:40]} is a pre-release of a version newer than the newest "
                              f"{self.engine} release read ({self.newest.name}); {self.covers}")
        exact = next((r for r in self.releases if r.key == key), None)
        if exact is not None:
            # a release candidate / dev build of X.Y.Z is cut from X.Y.Z's release branch: X.Y.Z's rules, said
            return Chosen(version, exact, f"{self.engine} {version[:40]} is a pre-release of {exact.name}: priced with "
                                          f"{exact.name}'s rules" if pre else "")
        if key > self.newest.key:
            # a patch release of the newest line read (0.34.2 of 0.34.0) takes its rules; a newer line is refused
            if self.allow_newer is False or (self.allow_newer == "patch"
                                             and (len(key) == 1 or key[:2] != self.newest.key[:2])):
                raise KvMathError(f"{self.flag} {version[:40]} is newer than the newest {self.engine} release read "
                                  f"({self.newest.name}); {self.covers}")
            return Chosen(version, self.newest,
                          f"{self.engine} {version[:40]} is newer than the newest release read ({self.newest.name}): "
                          f"its rules are {self.newest.name}'s")
        prev = [r for r in self.releases if r.key < key][-1]
        return Chosen(version, prev, f"{self.engine} {version[:40]} takes the rules of {prev.name}, the newest "
                                     "read release before it" + (" (a pre-release, read as its final release)"
                                                                 if pre else ""))
