"""Reading TOML tables with errors that name the key: the building blocks of the scenario
parser (durations, typed getters, unknown-key checks)."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from typing import Any


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the key."""

    def __str__(self) -> str:
        return f"ScenarioError: {self.args[0]}"


MAX_NUMBER = 1e15
"""The largest number a scenario may give (a rate, a size, a factor, a capacity): far past
any cluster, and small enough that the products of a few stay finite."""


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object, where: str) -> float:
    """Seconds from a number or a text like ``"1h30m"``; at most ``MAX_NUMBER`` (a text of
    hundreds of digits reads as infinity)."""
    if isinstance(value, bool):
        raise ScenarioError(f"{where}: expected a duration, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ScenarioError(f"{where}: a duration is a finite number, not {value}")
        if value < 0:
            raise ScenarioError(f"{where}: a duration cannot be negative")
        return _bounded(float(value), where)
    if isinstance(value, str):
        text = value.replace(" ", "")
        pos = 0
        total = 0.0
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            total += float(match.group(1)) * _UNIT_S[match.group(2)]
            pos = match.end()
        if pos == len(text) and text:
            return _bounded(total, where)
    raise ScenarioError(f'{where}: "{value}" is not a duration (e.g. 90, "90s", "5m", "1h30m")')


def _bounded(seconds: float, where: str) -> float:
    if not seconds <= MAX_NUMBER:  # also infinity, which the text's float may be
        raise ScenarioError(f"{where}: a duration is at most {MAX_NUMBER:g} s")
    return seconds


class Table:
    """A TOML table being read: typed getters that name the key on error, and a check that
    no unknown key is left."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: expected a table")
        self.data: dict[str, Any] = data
        self.where = where
        self.used: set[str] = set()
        self.known: set[str] = set()  # every key asked for, read or not: for "did you mean"

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        self.known.add(key)
        return key in self.data

    def raw(self, key: str, default: object = None) -> Any:
        self.used.add(key)
        self.known.add(key)
        return self.data.get(key, default)

    def required(self, key: str, default: object) -> Any:
        """The value of ``key`` (or ``default``); a key with neither is an error that says
        it is missing, not that it has the wrong type."""
        value = self.raw(key, default)
        if value is None:
            typo = difflib.get_close_matches(key, [k for k in self.data if k not in self.used], 1)
            hint = f" ({self.path(typo[0])} is no key; a typo of {key}?)" if typo else ""
            raise ScenarioError(f"{self.path(key)}: missing{hint}")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        value = self.required(key, default)
        if not isinstance(value, str):
            raise ScenarioError(f"{self.path(key)}: expected a string")
        return value

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        minimum: float = 0.0,
        maximum: float = MAX_NUMBER,
    ) -> float:
        value = self.required(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(f"{self.path(key)}: expected a number")
        if not math.isfinite(value):  # TOML has nan and inf; no figure here can be one
            raise ScenarioError(f"{self.path(key)}: expected a finite number, not {value}")
        if value < minimum:
            raise ScenarioError(f"{self.path(key)}: must be at least {minimum:g}")
        if value > maximum:  # MAX_NUMBER: products of a few such would overflow a double
            raise ScenarioError(f"{self.path(key)}: must be at most {maximum:g}")
        return float(value)

    def integer(
        self, key: str, default: int | None = None, *, minimum: int = 0, maximum: int | None = None
    ) -> int:
        value = self.required(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.path(key)}: expected an integer")
        if value < minimum:
            raise ScenarioError(f"{self.path(key)}: must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ScenarioError(f"{self.path(key)}: must be at most {maximum:,}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.path(key)}: expected true or false")
        return value

    def duration(self, key: str, default: object = None) -> float:
        return parse_duration(self.required(key, default), self.path(key))

    def sub(self, key: str) -> Table:
        return Table(self.raw(key, {}), self.path(key))

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise ScenarioError(f"{self.path(unknown[0])}: unknown key{self.hint(unknown[0])}")

    def hint(self, key: str) -> str:
        """`` (did you mean K?)`` for the known key nearest ``key``; empty if none is near."""
        meant = difflib.get_close_matches(key, sorted(self.known), 1)
        return f" (did you mean {meant[0]}?)" if meant else ""

    def misspelt(self, candidates: Iterable[str]) -> str:
        """`` (K is no key: did you mean C?)`` for the first key of the table that no one
        asked for and that is near one of ``candidates``; empty if there is none."""
        pool = sorted(candidates)
        for key in sorted(set(self.data) - self.known):
            meant = difflib.get_close_matches(key, pool, 1)
            if meant:
                return f" ({self.path(key)} is no key: did you mean {meant[0]}?)"
        return ""
