"""Regular expressions from users and clients matched in time linear in the text: RE2, the
engine behind the RE2J of Pulsar's default ``topicsPatternRegexImplementation``. Python's
``re`` backtracks: ``(a+)+`` against 30 ``a`` and a ``!`` took 26 s on the event loop."""

from __future__ import annotations

from collections.abc import Callable

import re2


def linear_fullmatch(pattern: str) -> Callable[[str], object] | None:
    """Whole-string matching of ``pattern`` by RE2; None when RE2 cannot take it (not a
    regular expression, or one only a backtracking engine runs: backreferences, lookaround,
    possessive quantifiers). RE2's own cache keeps the last 128 compiled."""
    options = re2.Options()
    options.log_errors = False  # a pattern RE2 cannot take is the caller's case, no error
    try:
        matcher: Callable[[str], object] = re2.compile(pattern, options=options).fullmatch
    except re2.error:
        return None
    return matcher
