"""The admin paths ``pipeline shed --apply`` sends decisions to."""

from __future__ import annotations

from ballast.cli.shed_apply import unload_path


def test_unload_and_transfer_paths() -> None:
    assert unload_path("public/demo/0x00000000_0x40000000", None) == (
        "/admin/v2/namespaces/public/demo/0x00000000_0x40000000/unload"
    )
    assert unload_path("t/ns/0x40000000_0x80000000", "127.0.0.1:8081") == (
        "/admin/v2/namespaces/t/ns/0x40000000_0x80000000/unload?destinationBroker=127.0.0.1%3A8081"
    )
