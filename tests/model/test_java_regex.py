"""Isolation-policy regexes are Java's (Pulsar matches them with ``Pattern.matches``): what
Python and RE2 read differently is rewritten, or refused with the reason, never matched as
something else."""

from __future__ import annotations

import pytest
import re2
from hypothesis import given
from hypothesis import strategies as st

from ballast.model.java_regex import JavaRegexError, compile_java, re2_reads_alike, to_python
from ballast.model.linear_regex import linear_fullmatch

# Java's answers: (pattern, matched, not matched)
JAVA_MATCHES = [
    (r"\Q10.0.0.1\E", ["10.0.0.1"], ["10a0b0c1"]),
    (r"\Qa+b", ["a+b"], ["aab"]),  # \Q to the end
    (r"[\Q-]\E]+", ["-]-"], ["a"]),
    (r"\p{Alnum}+\.0\.0\.1", ["abc9.0.0.1"], ["\u00e9.0.0.1", "a_.0.0.1"]),
    (r"\P{Digit}x", ["ax"], ["1x"]),
    (r"[\p{Lower}\p{Digit}]+", ["a9"], ["A"]),
    (r"(?<h>1[0-9])\.\k<h>", ["10.10"], ["10.11"]),
    (r"(?<!x)a", ["a"], []),  # a lookbehind stays one
    (r"\d+", ["123"], ["\u0663"]),  # ASCII in Java, unless UNICODE_CHARACTER_CLASS
    (r"\w+", ["a_1"], ["\u00e9"]),
    (r"(?i)broker", ["BROKER"], ["bro\u212aer"]),  # the Kelvin sign: a k to RE2's folding
    (r"a\0101", ["aA"], ["a\b1"]),
    (r"\0777", ["?7"], ["\u01ff"]),
    (r"a\hb", ["a\u2000b", "a b"], ["a\nb"]),
    (r"a\vb", ["a\nb", "a\u2028b"], ["a b"]),
    (r"\e", ["\x1b"], ["e"]),
    (r"ab\z", ["ab"], []),
    (r"broker-[0-9]+\..*", ["broker-12.example"], ["broker-.x"]),
]


@pytest.mark.parametrize(("pattern", "matched", "unmatched"), JAVA_MATCHES)
def test_python_and_re2_match_what_java_matches(
    pattern: str, matched: list[str], unmatched: list[str]
) -> None:
    python = compile_java(pattern)
    python_text = to_python(pattern)
    linear = linear_fullmatch(python_text) if re2_reads_alike(python_text) else None
    for text in matched:
        assert python.fullmatch(text), (pattern, text)
        assert linear is None or linear(text), (pattern, text)
    for text in unmatched:
        assert not python.fullmatch(text), (pattern, text)
        assert linear is None or not linear(text), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        # Python read "[1-3&&[^2]" then a literal "]": it matched no host, silently
        (r"10\.0\.0\.[1-3&&[^2]]", "&& in a class at 14"),
        (r"[a-c[x-z]]", "a class inside a class"),
        (r"[]a]", "a ] first in a class"),
        (r"\p{L}+", "only Java's POSIX classes"),
        (r"\p{IsLatin}", "only Java's POSIX classes"),
        (r"[^\P{Digit}]", "inside a class"),
        (r"host\Z", r"\Z (end before a final line break)"),
        (r"\R", r"\R (any line break)"),
        ("a\\", "lone backslash"),
        (r"\0", "no octal digit"),
        (r"(x", "missing ), unterminated subpattern"),  # not a regex at all
    ],
)
def test_what_would_match_otherwise_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(JavaRegexError, match=re2.escape(reason)):
        compile_java(pattern)


@given(st.text(alphabet="ab09.*+?|(){}^$-_:", max_size=20))
def test_patterns_without_escapes_classes_or_named_groups_are_unchanged(pattern: str) -> None:
    if "(?<" in pattern:
        return
    assert to_python(pattern) == pattern
