"""Text from users (cluster, namespace, scenario and broker names) on matplotlib charts."""

from __future__ import annotations


def plain(text: str) -> str:
    """``text`` as matplotlib draws it literally: a pair of ``$`` would start its math mode
    (``t$\\frac$/ns`` stopped a report with a parse error)."""
    return text.replace("$", r"\$")
