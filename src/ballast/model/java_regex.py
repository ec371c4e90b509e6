"""Java regular expressions (``java.util.regex``, what Pulsar's isolation policies are written
in) rewritten for Python's ``re`` and RE2, which read some of Java's syntax differently or not
at all.

Rewritten: ``\\Q...\\E`` quoting, named groups ``(?<name>...)`` and ``\\k<name>``, the POSIX
classes ``\\p{Alnum}`` and the like (ASCII, as Java's are by default), ``\\e``, ``\\z``, ``\\h``
and Java's ``\\v`` (vertical whitespace, not Python's vertical tab). Refused with a reason,
where Python would match something else without a word: a class inside a class
(``[a-c[x-z]]``, Java's union), ``&&`` in a class (Java's intersection), other ``\\p{...}``
properties, and the anchors ``\\Z``, ``\\G`` and ``\\R``. What is left reads the same in both,
given :data:`FLAGS` (``\\d``, ``\\s``, ``\\w`` and case folding are ASCII in Java by default).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ballast.model.linear_regex import linear_fullmatch

FLAGS = re.ASCII

# Java's POSIX character classes (java.util.regex.Pattern, US-ASCII only), as class contents.
_PUNCT = re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_POSIX: dict[str, str] = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": _PUNCT,
    "Graph": "a-zA-Z0-9" + _PUNCT,
    "Print": "\\x20-\\x7e",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
# Escapes that mean a class in Java and another thing, or nothing, in Python.
# (Characters past U+00FF are written as themselves: RE2 has no \\u escape.)
_CLASSES: dict[str, str] = {
    "h": " \\t\\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000",
    "v": "\\n\\x0b\\f\\r\\x85\u2028\u2029",
}
_REFUSED_ESCAPES = {
    "Z": "\\Z (end before a final line break) has no Python equivalent; use $ or nothing",
    "G": "\\G (end of the previous match) has no Python equivalent",
    "R": "\\R (any line break) has no Python equivalent; write (?:\\r\\n|[\\n\\r])",
    "X": "\\X (a grapheme cluster) has no Python equivalent",
}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CASE_FOLDING = re.compile(r"\(\?[a-zA-Z-]*i")  # (?i), (?si), (?i:...); (?-i) is harmless


class JavaRegexError(ValueError):
    """A Java regex this module cannot rewrite faithfully."""


def to_python(pattern: str) -> str:
    """``pattern`` (Java syntax) as a pattern that Python's ``re`` (with :data:`FLAGS`) and
    RE2 match the same strings with; JavaRegexError for what they would read otherwise."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i = _escape(pattern, i, in_class, out)
            continue
        if in_class:
            if ch == "[":
                raise JavaRegexError(
                    f"a class inside a class at {i} (Java's union, [a[b]]) is not supported: "
                    "write the class out"
                )
            if pattern.startswith("&&", i):
                raise JavaRegexError(
                    f"&& in a class at {i} (Java's intersection) is not supported: write the "
                    "class out"
                )
            in_class = ch != "]"
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            negated = pattern.startswith("[^", i)
            out.append("[^" if negated else "[")
            i += 2 if negated else 1
            if pattern.startswith("]", i):  # a literal to Python, not to Java
                raise JavaRegexError(f"a ] first in a class at {i}: escape it (\\])")
            in_class = True
            continue
        if pattern.startswith("(?<", i) and _NAME.match(pattern, i + 3):
            out.append("(?P<")  # a named group; (?<= and (?<! are lookbehinds in both
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool, out: list[str]) -> int:
    """Rewrite the escape at ``pattern[i]`` (a backslash) into ``out``; the index after it."""
    if i + 1 >= len(pattern):
        raise JavaRegexError("the pattern ends with a lone backslash")
    kind = pattern[i + 1]
    if kind == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
        out.append("".join(re.escape(c) for c in literal))
        return len(pattern) if end < 0 else end + 2
    if kind in "pP":
        name, after = _property_name(pattern, i + 2)
        members = _POSIX.get(name)
        if members is None:
            raise JavaRegexError(
                f"\\{kind}{{{name}}} at {i}: only Java's POSIX classes "
                f"({', '.join(_POSIX)}) are supported"
            )
        if in_class and kind == "P":
            raise JavaRegexError(f"\\P{{{name}}} inside a class at {i} is not supported")
        if in_class:
            out.append(members)
        else:
            out.append(f"[{'^' if kind == 'P' else ''}{members}]")
        return after
    if kind == "k" and pattern.startswith("<", i + 2):
        end = pattern.find(">", i + 3)
        if end < 0:
            raise JavaRegexError(f"\\k< at {i} has no closing >")
        out.append(f"(?P={pattern[i + 3 : end]})")
        return end + 1
    if kind in _CLASSES:
        members = _CLASSES[kind]
        out.append(members if in_class else f"[{members}]")
        return i + 2
    if kind in _REFUSED_ESCAPES:
        raise JavaRegexError(f"at {i}: {_REFUSED_ESCAPES[kind]}")
    if kind == "0":  # Java: \0n, \0nn, \0mnn (m <= 3); Python reads at most \0nn
        digits = re.match("[0-7]{1,3}", pattern[i + 2 : i + 5])
        if digits is None:
            raise JavaRegexError(f"\\0 at {i} is followed by no octal digit")
        octal = digits.group()
        if len(octal) == 3 and octal[0] > "3":
            octal = octal[:2]
        out.append(f"\\x{int(octal, 8):02x}")
        return i + 2 + len(octal)
    if kind == "e":
        out.append("\\x1b")
    elif kind == "z":
        out.append("\\Z")  # the very end, in both
    else:
        out.append(pattern[i : i + 2])
    return i + 2


def _property_name(pattern: str, i: int) -> tuple[str, int]:
    """The name after ``\\p`` at ``i`` (``{Name}`` or one letter), and the index after it."""
    if pattern.startswith("{", i):
        end = pattern.find("}", i + 1)
        if end < 0:
            raise JavaRegexError(f"\\p{{ at {i - 2} has no closing }}")
        return pattern[i + 1 : end], end + 1
    if i < len(pattern):
        return pattern[i], i + 1
    raise JavaRegexError("the pattern ends with \\p")


def re2_reads_alike(python: str) -> bool:
    """Whether RE2 matches what :func:`to_python` gave as Python does: not where the pattern
    turns on case folding, which is ASCII-only in Java and Python but Unicode in RE2 (the
    Kelvin sign is a ``k`` to it)."""
    return _CASE_FOLDING.search(python) is None


def java_fullmatch(pattern: str) -> Callable[[str], object]:
    """Whole-string matching of ``pattern`` (Java syntax), as Java's ``Pattern.matches``: by
    RE2, in time linear in the text, where RE2 reads the rewritten pattern as Python does;
    by Python's ``re`` otherwise (backreferences, lookaround, case folding). JavaRegexError
    for a pattern :func:`to_python` refuses; ``re.error`` for one that is no regex."""
    python = to_python(pattern)
    linear = linear_fullmatch(python) if re2_reads_alike(python) else None
    return linear or re.compile(python, FLAGS).fullmatch


def compile_java(pattern: str) -> re.Pattern[str]:
    """``pattern`` (Java syntax) compiled by Python's ``re``; JavaRegexError, with the
    reason, when it is not a regex or cannot be read as Java reads it."""
    try:
        return re.compile(to_python(pattern), FLAGS)
    except re.error as exc:
        raise JavaRegexError(str(exc)) from None
