"""Semantic versions as Pulsar's ``BrokerVersionFilter`` reads them (the jsemver library):
``MAJOR.MINOR.PATCH[-pre.release][+build.meta]``, ordered by SemVer precedence; its
"build-aware" order also ranks a version with build metadata above the same version without.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?",
    re.ASCII,
)


class InvalidVersion(ValueError):
    """Not a semantic version."""


def _compare_identifiers(left: tuple[str, ...], right: tuple[str, ...]) -> int:
    """SemVer identifier precedence: numeric identifiers compare as numbers and below
    alphanumeric ones, alphanumeric ones compare in ASCII order, a shorter list that is a
    prefix of the other is lower."""
    for a, b in zip(left, right, strict=False):
        a_num, b_num = a.isdigit(), b.isdigit()
        if a_num and b_num:
            diff = int(a) - int(b)
            if diff:
                return -1 if diff < 0 else 1
        elif a_num != b_num:
            return -1 if a_num else 1
        elif a != b:
            return -1 if a < b else 1
    return (len(left) > len(right)) - (len(left) < len(right))


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre_release: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        """SemVer precedence (build metadata ignored): -1, 0 or 1."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre_release or not other.pre_release:
            # A pre-release is below its normal version.
            return (not self.pre_release) - (not other.pre_release)
        return _compare_identifiers(self.pre_release, other.pre_release)

    def build_aware_compare(self, other: Version) -> int:
        """Precedence, then build metadata: a version with it ranks above one without."""
        result = self.compare(other)
        if result != 0:
            return result
        if not self.build or not other.build:
            return bool(self.build) - bool(other.build)
        return _compare_identifiers(self.build, other.build)


def parse_version(text: str) -> Version:
    """Parse a semantic version; raises :class:`InvalidVersion`."""
    match = _SEMVER.fullmatch(text)
    if match is None:
        raise InvalidVersion(f'"{text}" is not a semantic version (MAJOR.MINOR.PATCH)')
    major, minor, patch, pre, build = match.groups()
    return Version(
        int(major),
        int(minor),
        int(patch),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )
