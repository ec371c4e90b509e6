"""Topic and namespace names, parsed and validated exactly as Pulsar's ``TopicName`` and
``NamespaceName`` do.

A name is parsed once, here, into a frozen value; everything downstream works with the value and
its canonical string, never re-parsing (STYLE 9). Errors name the part that is wrong.
"""

from __future__ import annotations

import enum
import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import quote_plus, unquote_plus, urlsplit

PUBLIC_TENANT = "public"
DEFAULT_NAMESPACE = "default"
PARTITIONED_TOPIC_SUFFIX = "-partition-"
SYSTEM_NAMESPACE = "pulsar/system"
HEARTBEAT_TENANT = "pulsar"
SLA_MONITOR_TENANT = "sla-monitor"  # Pulsar's SLA_NAMESPACE_PROPERTY

# Pulsar's NamedEntity pattern: Java's \w without UNICODE_CHARACTER_CLASS is ASCII-only.
_NAMED_ENTITY = re.compile(r"[-=:.\w]*", re.ASCII)
_JAVA_INT_MAX = 2**31 - 1
# Half a UTF-16 surrogate pair: what Python makes of bytes that are not UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


class InvalidNameError(ValueError):
    """A name that Pulsar would reject. ``str(error)`` names the bad part."""

    kind = "InvalidName"

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}"


class InvalidTopicName(InvalidNameError):
    kind = "InvalidTopicName"


class UnservableTopicName(InvalidTopicName):
    """A topic name Pulsar's parser accepts but Ballast cannot serve (``.`` and ``..``: path
    steps in its URLs and store paths). Clients validate names as Pulsar does, so this is the
    only refusal of a name they can meet from a Ballast broker."""


class InvalidNamespaceName(InvalidNameError):
    kind = "InvalidNamespaceName"


class TopicDomain(enum.Enum):
    """Whether a topic's messages are stored (``persistent``) or only relayed."""

    PERSISTENT = "persistent"
    NON_PERSISTENT = "non-persistent"

    @classmethod
    def parse(cls, text: str) -> TopicDomain:
        """Case-insensitive, as Pulsar's ``TopicDomain.getEnum``."""
        found = _DOMAINS.get(text.lower())
        if found is None:
            raise ValueError(f'domain "{text}" is not "persistent" or "non-persistent"')
        return found

    def __str__(self) -> str:
        return self.value


_DOMAINS = {domain.value: domain for domain in TopicDomain}


def _check_part(role: str, value: str, whole: str, error: type[InvalidNameError]) -> None:
    where = "" if whole == value else f' in "{whole}"'  # a name on its own is not repeated
    if value == "":
        raise error(f'{role} "" is empty{where}' if where else f"{role} name is empty")
    if _NAMED_ENTITY.fullmatch(value) is None:
        raise error(f'{role} "{value}" has characters outside [a-zA-Z0-9_-=:.]{where}')
    if value in (".", ".."):
        # Pulsar's pattern lets them through, and then no metadata path can hold them.
        raise error(f'{role} "{value}" is not a name: "." and ".." are path steps{where}')


def validate_tenant(name: str) -> None:
    """A tenant name on its own (``InvalidNamespaceName`` naming the problem)."""
    _check_part("tenant", name, name, InvalidNamespaceName)


def validate_entity_name(role: str, name: str) -> None:
    """A name kept as one metadata path step (a failure domain, say): Pulsar's named-entity
    characters, not empty, not ``.`` or ``..`` (``InvalidNameError`` naming ``role``)."""
    _check_part(role, name, name, InvalidNameError)


@dataclass(frozen=True, slots=True)
class NamespaceName:
    """``tenant/namespace`` (v2) or the legacy ``tenant/cluster/namespace`` (v1)."""

    tenant: str
    local_name: str
    cluster: str | None = None

    @classmethod
    def parse(cls, text: str) -> NamespaceName:
        """Parse as Pulsar's ``NamespaceName.get``: Java ``String.split("/")`` semantics, so
        trailing empty pieces are dropped (``a/b/`` is ``a/b``) but inner and leading ones are
        not."""
        if text == "":
            raise InvalidNamespaceName('namespace "" is empty')
        parts = text.split("/")
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) == 2:
            return cls.of(parts[0], parts[1], whole=text)
        if len(parts) == 3:
            return cls.of(parts[0], parts[2], cluster=parts[1], whole=text)
        raise InvalidNamespaceName(
            f'"{text}" is not <tenant>/<namespace> or <tenant>/<cluster>/<namespace>'
        )

    @classmethod
    def of(
        cls, tenant: str, local_name: str, cluster: str | None = None, *, whole: str | None = None
    ) -> NamespaceName:
        """Build from parts, validating each as Pulsar's ``validateNamespaceName``."""
        shown = (
            whole
            if whole is not None
            else "/".join(p for p in (tenant, cluster, local_name) if p is not None)
        )
        _check_part("tenant", tenant, shown, InvalidNamespaceName)
        if cluster is not None:
            _check_part("cluster", cluster, shown, InvalidNamespaceName)
        _check_part("namespace", local_name, shown, InvalidNamespaceName)
        return cls(tenant, local_name, cluster)

    @property
    def is_v2(self) -> bool:
        return self.cluster is None

    def __lt__(self, other: NamespaceName) -> bool:
        """Ordered by the canonical string (so bundles sort by namespace, then range)."""
        return str(self) < str(other)

    def __le__(self, other: NamespaceName) -> bool:
        return str(self) <= str(other)

    def __gt__(self, other: NamespaceName) -> bool:
        return str(self) > str(other)

    def __ge__(self, other: NamespaceName) -> bool:
        return str(self) >= str(other)

    @property
    def is_system_service(self) -> bool:
        """The namespaces Pulsar keeps out of load shedding (``isSystemServiceNamespace``):
        ``pulsar/system``, the heartbeat namespaces ``pulsar/<host:port>`` and
        ``pulsar/<cluster>/<host:port>``, and the SLA-monitor namespaces
        ``sla-monitor/<cluster>/<host:port>``."""
        if self.tenant == SLA_MONITOR_TENANT:
            return self.cluster is not None and _looks_like_host_port(self.local_name)
        if self.tenant != HEARTBEAT_TENANT:
            return False
        if self.is_v2 and self.local_name == "system":
            return True
        return _looks_like_host_port(self.local_name)

    @property
    def is_heartbeat(self) -> bool:
        """A broker's heartbeat namespace, ``pulsar/<host:port>`` or
        ``pulsar/<cluster>/<host:port>``: only that broker may own it (Pulsar's
        ``isHeartbeatNamespace``; ``pulsar/system`` is a system namespace, not one of these)."""
        return self.tenant == HEARTBEAT_TENANT and _looks_like_host_port(self.local_name)

    def __str__(self) -> str:
        if self.cluster is None:
            return f"{self.tenant}/{self.local_name}"
        return f"{self.tenant}/{self.cluster}/{self.local_name}"


def _looks_like_host_port(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    return bool(sep) and bool(host) and port.isdigit()


def heartbeat_namespace(broker_id: str, cluster: str | None = None) -> NamespaceName:
    """The namespace only broker ``broker_id`` (``host:port``) may own: ``pulsar/<host:port>``
    (v2) or ``pulsar/<cluster>/<host:port>`` (v1)."""
    return NamespaceName.of(HEARTBEAT_TENANT, broker_id, cluster)


def not_utf8(text: str, *, from_bytes: bool = True) -> str | None:
    """``text`` shown with what UTF-8 cannot encode escaped, or None when it is valid UTF-8
    text; other text names no record, as no store can encode it. ``from_bytes``: ``text``
    was decoded from bytes (a command-line argument), so show the bytes that were not UTF-8
    (``\\xff``); else (a JSON string) show its lone surrogates as JSON writes them
    (``\\udcff``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return None
    if from_bytes:
        try:  # the bytes as given: \xff, not the surrogate Python decoded it to
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte decodes to (\ud800)
            pass
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def java_parse_int(text: str) -> int | None:
    """``Integer.parseInt`` semantics: optional sign, decimal digits (any Unicode Nd digit of
    the Basic Multilingual Plane, as ``Character.digit`` reads one UTF-16 unit: a digit past
    it, such as U+1D7D1, is two surrogates to Java, neither a digit), within the 32-bit signed
    range; None where Java throws."""
    if text == "":
        return None
    sign = 1
    digits = text
    if text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        digits = text[1:]
    if digits == "":
        return None
    value = 0
    for ch in digits:
        digit = unicodedata.decimal(ch, None) if ch <= "\uffff" else None
        if digit is None:
            return None
        value = value * 10 + digit
    value *= sign
    if value > _JAVA_INT_MAX or value < -_JAVA_INT_MAX - 1:
        return None
    return value


def java_url_encode(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF-8)``: letters, digits and ``.-*_`` stay; space is
    ``+``; every other byte is ``%XX``."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def java_url_decode(text: str) -> str:
    """Inverse of :func:`java_url_encode` (``URLDecoder.decode``)."""
    return unquote_plus(text)


def partition_index(name: str) -> int:
    """Pulsar's ``TopicName.getPartitionIndex``: the number after the last ``-partition-``, or
    -1 when there is none, it does not parse, is negative, or is not written canonically
    (``01``, ``+1``)."""
    if PARTITIONED_TOPIC_SUFFIX not in name:
        return -1
    text = name.rsplit(PARTITIONED_TOPIC_SUFFIX, 1)[1]
    value = java_parse_int(text)
    if value is None or value < 0:
        return -1
    if len(text) != len(str(value)):
        return -1
    return value


@dataclass(frozen=True, slots=True)
class TopicName:
    """A fully qualified topic: ``domain://tenant/namespace/local`` or the legacy
    ``domain://tenant/cluster/namespace/local``."""

    domain: TopicDomain
    namespace: NamespaceName
    local_name: str

    @classmethod
    def parse(cls, text: str) -> TopicName:
        """Parse as Pulsar's ``TopicName.get``, including its short forms (``t`` →
        ``persistent://public/default/t``, ``a/b/c`` → ``persistent://a/b/c``) and the rule that
        the part after ``://`` is split on ``/`` into at most 4 pieces (so a local name with a
        slash makes a v1 name). Parsed names are memoised (they are immutable values and the
        same names are parsed again and again, e.g. by every broker indexing a namespace),
        those up to ``MEMOISED_NAME_LENGTH`` characters long."""
        return _parse_topic(text)

    @classmethod
    def _parse_uncached(cls, text: str) -> TopicName:
        complete = text
        if "://" not in complete:
            tokens = [t for t in complete.split("/") if t != ""]
            if len(tokens) == 3:
                complete = f"persistent://{complete}"
            elif len(tokens) == 1:
                complete = f"persistent://{PUBLIC_TENANT}/{DEFAULT_NAMESPACE}/{tokens[0]}"
            else:
                raise InvalidTopicName(
                    f'short name "{text}" is not <tenant>/<namespace>/<topic> or <topic>'
                )
        domain_text, rest = complete.split("://", 1)
        try:
            domain = TopicDomain.parse(domain_text)
        except ValueError as exc:
            raise InvalidTopicName(f'{exc} in "{text}"') from None
        parts = rest.split("/", 3)
        try:
            if len(parts) == 3:
                namespace = NamespaceName.of(parts[0], parts[1], whole=text)
            elif len(parts) == 4:
                namespace = NamespaceName.of(parts[0], parts[2], cluster=parts[1], whole=text)
            else:
                raise InvalidTopicName(f'"{text}" is not <domain>://<tenant>/<namespace>/<topic>')
        except InvalidNamespaceName as exc:
            raise InvalidTopicName(exc.args[0]) from None
        local_name = parts[-1]
        if local_name == "":
            raise InvalidTopicName(f'topic "" is empty in "{text}"')
        if local_name in (".", ".."):
            # Its URL and store path would step to another node (a redirect to it led nowhere).
            raise UnservableTopicName(
                f'topic "{local_name}" is not a name: "." and ".." are path steps in "{text}"'
            )
        if _SURROGATE.search(local_name):
            # bytes that were not UTF-8 (a shell argument, say): a name no client could send
            shown = not_utf8(text) or text
            raise InvalidTopicName(f'topic name "{shown}" is not valid UTF-8 text')
        return cls(domain, namespace, local_name)

    @classmethod
    def of(cls, domain: TopicDomain, namespace: NamespaceName, local_name: str) -> TopicName:
        """Compose ``domain://namespace/local_name`` and parse it (so the same rules apply)."""
        return cls.parse(f"{domain.value}://{namespace}/{local_name}")

    @property
    def tenant(self) -> str:
        return self.namespace.tenant

    @property
    def cluster(self) -> str | None:
        return self.namespace.cluster

    @property
    def namespace_portion(self) -> str:
        return self.namespace.local_name

    @property
    def is_v2(self) -> bool:
        return self.namespace.is_v2

    @property
    def is_persistent(self) -> bool:
        return self.domain is TopicDomain.PERSISTENT

    @property
    def partition_index(self) -> int:
        return partition_index(str(self))

    @property
    def is_partition(self) -> bool:
        return self.partition_index != -1

    def partition(self, index: int) -> TopicName:
        """Pulsar's ``getPartition``: this topic's partition ``index`` (itself for -1 or when
        the name already ends with that suffix)."""
        if index == -1 or str(self).endswith(f"{PARTITIONED_TOPIC_SUFFIX}{index}"):
            return self
        return TopicName.parse(f"{self}{PARTITIONED_TOPIC_SUFFIX}{index}")

    @property
    def partitioned_parent(self) -> TopicName:
        """The partitioned topic this partition belongs to: itself if not a partition, or if
        what precedes the suffix names no topic (``-partition-0``, ``.-partition-1``), which
        no partitioned topic can have."""
        if not self.is_partition:
            return self
        whole = str(self)
        try:
            return TopicName.parse(whole[: whole.rindex(PARTITIONED_TOPIC_SUFFIX)])
        except InvalidNameError:
            return self

    @property
    def encoded_local_name(self) -> str:
        """The local name URL-encoded as Pulsar's ``Codec.encode`` (Java's ``URLEncoder``:
        space becomes ``+``, ``*`` stays), for REST and store paths."""
        return java_url_encode(self.local_name)

    @property
    def persistence_name(self) -> str:
        """``tenant/[cluster/]namespace/domain/encodedLocal`` — the managed-ledger name."""
        return f"{self.namespace}/{self.domain.value}/{self.encoded_local_name}"

    @property
    def lookup_name(self) -> str:
        """``domain/tenant/[cluster/]namespace/encodedLocal`` — the REST lookup path."""
        return f"{self.domain.value}/{self.namespace}/{self.encoded_local_name}"

    def __str__(self) -> str:
        return f"{self.domain.value}://{self.namespace}/{self.local_name}"


# Names longer than this are not memoised: the caches are bounded by entries, and a client
# that asked about a few hundred distinct names of a megabyte each (which no rule refuses)
# grew a broker by gigabytes that stayed.
MEMOISED_NAME_LENGTH = 1024

R = TypeVar("R")


class NameMemo(Generic[R]):
    """A function of names (strings, or tuples of them) memoised while its names come to at
    most ``MEMOISED_NAME_LENGTH`` characters in all; longer ones are computed each time.
    Other arguments count for nothing."""

    def __init__(self, function: Callable[..., R], maxsize: int) -> None:
        self._function = function
        self._memo = functools.lru_cache(maxsize=maxsize)(function)
        functools.update_wrapper(self, function)

    def __call__(self, *args: object) -> R:
        size = 0
        for arg in args:
            if isinstance(arg, str):
                size += len(arg)
            elif isinstance(arg, tuple):
                size += sum(len(part) for part in arg if isinstance(part, str))
        return (self._function if size > MEMOISED_NAME_LENGTH else self._memo)(*args)

    def cache_info(self) -> functools._CacheInfo:
        return self._memo.cache_info()

    def cache_clear(self) -> None:
        self._memo.cache_clear()


def name_memo(maxsize: int) -> Callable[[Callable[..., R]], NameMemo[R]]:
    """Decorate a function of names as a :class:`NameMemo` of ``maxsize`` entries."""
    return lambda function: NameMemo(function, maxsize)


@name_memo(maxsize=1 << 18)
def _parse_topic(text: str) -> TopicName:
    return TopicName._parse_uncached(text)


def destination_broker_id(text: str) -> str | None:
    """The broker id (``host:port``) that an unload's ``destinationBroker`` names: the id, or
    the broker's web service URL (Pulsar takes either; a trailing ``/`` is still the URL of
    the broker); None when ``text`` is neither."""
    if "://" in text:
        parts = urlsplit(text)
        if (
            parts.scheme not in ("http", "https")
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
        ):
            return None
        text = parts.netloc
    if not _looks_like_host_port(text):
        return None
    host, _, port = text.rpartition(":")
    if any(c.isspace() or c in "/?#@" for c in host) or not (
        port.isascii() and 0 < int(port) < 65536
    ):
        return None
    return text
