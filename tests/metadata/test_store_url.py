"""Store URLs that name no store are refused where they are parsed, in one line."""

from __future__ import annotations

import pytest

from ballast.metadata.factory import InvalidStoreUrlError, parse_store_url


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("zk:127.0.0.1:2181/\udcff", 'chroot "/\\xff" is not valid UTF-8 text'),
        ("zk:127.0.0.1:2181/ok/caf\udce9", 'chroot "/ok/caf\\xe9" is not valid UTF-8 text'),
        ("127.0.0.1:2181/\udcff", 'chroot "/\\xff" is not valid UTF-8 text'),  # no scheme
        ("zk:h\udcff:2181", 'host "h\\xff:2181" is not valid UTF-8 text'),
    ],
)
def test_a_url_that_is_not_utf8_text_is_refused_showing_its_bytes(url: str, said: str) -> None:
    """A chroot of bytes that are not UTF-8 (a shell argument) made kazoo fail in its own
    thread, with a traceback and a lost connection."""
    with pytest.raises(InvalidStoreUrlError) as caught:
        parse_store_url(url)
    assert said in str(caught.value)
    assert "\udcff" not in str(caught.value)  # the message itself can be printed


def test_a_schemeless_host_list_is_told_what_is_wrong_after_the_port() -> None:
    with pytest.raises(InvalidStoreUrlError, match="is not a clean path"):
        parse_store_url("127.0.0.1:2181/a/../b")
    with pytest.raises(InvalidStoreUrlError, match='unknown scheme "nosuch"'):
        parse_store_url("nosuch:thing")


def test_a_utf8_chroot_is_a_chroot() -> None:
    assert parse_store_url("zk:127.0.0.1:2181/café").target == "127.0.0.1:2181/café"
