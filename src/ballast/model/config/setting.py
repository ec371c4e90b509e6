"""The shape of one configuration key (:class:`Setting`) and the kinds of value a key takes;
the table of keys is :mod:`ballast.model.config.settings`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Kind(enum.Enum):
    BOOL = "boolean"
    INT = "integer"
    FLOAT = "number"
    STR = "string"
    LIST = "comma-separated list"
    OPTIONAL_FLOAT = "number or empty"


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration key. ``minimum`` and ``maximum`` bound a number; ``choices`` restrict
    a string, or each item of a list; ``aliases`` map other accepted spellings (such as
    Pulsar's class names) to a choice; ``pattern`` restricts a string, ``pattern_doc``
    saying how to the user. An integer is a Java ``int``, as most of Pulsar's are,
    or with ``java_long`` a ``long``: Pulsar refuses to start on a value its field cannot
    hold."""

    key: str
    kind: Kind
    default: object
    unit: str
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    deprecated: str = ""
    java_long: bool = False
    pattern: str = ""  # a string must match it whole
    pattern_doc: str = ""  # what it allows, for the error


BOOL, INT, FLOAT, STR, LIST, OPT_FLOAT = (
    Kind.BOOL,
    Kind.INT,
    Kind.FLOAT,
    Kind.STR,
    Kind.LIST,
    Kind.OPTIONAL_FLOAT,
)
