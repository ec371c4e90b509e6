"""End to end: ``ballast config show``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

Run = Callable[..., CompletedProcess[str]]


def test_show_merges_file_env_and_set(ballast: Run, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerSheddingIntervalMinutes=5\nbookkeeperClientTimeoutInSeconds=30\n")
    env = {**os.environ, "BALLAST_loadBalancerBrokerMaxTopics": "9"}
    result = ballast(
        "config",
        "show",
        "--config",
        str(conf),
        "--set",
        "loadBalancerEnabled=false",
        "--json",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["loadBalancerSheddingIntervalMinutes"]["value"] == 5
    assert body["loadBalancerSheddingIntervalMinutes"]["source"] == f"{conf}:1"
    assert body["loadBalancerBrokerMaxTopics"]["value"] == 9
    assert body["loadBalancerEnabled"] == {
        "value": False,
        "default": True,
        "unit": "",
        "source": "--set",
    }
    assert "bookkeeperClientTimeoutInSeconds" in result.stderr  # foreign keys: reported, not fatal


def test_show_changed_only_in_text(ballast: Run) -> None:
    result = ballast(
        "config",
        "show",
        "--changed",
        "--set",
        "loadBalancerSheddingGracePeriodMinutes=2",
        "--set",
        "loadBalancerSheddingIntervalMinutes=1",  # given, but the default: not a change
    )
    assert result.returncode == 0
    assert result.stdout.split() == [
        "loadBalancerSheddingGracePeriodMinutes",
        "2",
        "min",
        "(--set)",
    ]


def test_show_changed_with_nothing_changed_says_so(ballast: Run) -> None:
    text = ballast("config", "show", "--changed", "--set", "loadBalancerSheddingIntervalMinutes=1")
    assert (text.returncode, text.stdout) == (0, "")
    assert "every setting has its default value" in text.stderr
    as_json = ballast("config", "show", "--changed", "--json")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (0, {})


def test_a_pulsar_broker_conf_in_iso_8859_1_is_read(ballast: Run, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"  # Java reads properties files in ISO-8859-1
    conf.write_bytes(b"# caf\xe9\nloadBalancerSheddingIntervalMinutes 5\n")
    result = ballast("config", "show", "--config", str(conf), "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["loadBalancerSheddingIntervalMinutes"]
    assert (shown["value"], shown["source"]) == (5, f"{conf}:2")


def test_show_warns_on_typos_and_fails_on_bad_values(ballast: Run) -> None:
    typo = ballast("config", "show", "--changed", "--set", "loadBalancerSheddingEnable=false")
    assert typo.returncode == 0
    assert "did you mean loadBalancerSheddingEnabled?" in typo.stderr
    bad = ballast("config", "show", "--set", "loadBalancerSheddingEnabled=maybe")
    assert bad.returncode == 2
    assert 'loadBalancerSheddingEnabled="maybe" is not a valid boolean' in bad.stderr
    missing = ballast("config", "show", "--config", "/nonexistent/broker.conf")
    assert missing.returncode == 2 and "cannot read config file" in missing.stderr


def test_control_characters_in_a_settings_file_reach_the_terminal_escaped(
    ballast: Run, tmp_path: Path
) -> None:
    """A value (or a key) quoted in a message came out raw: an escape sequence recoloured
    the terminal, a NUL cut the line."""
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=a\x00b\x1b[31m\n", encoding="utf-8")
    result = ballast("config", "show", "--config", str(conf))
    assert result.returncode == 2
    assert 'clusterName="a\\x00b\\x1b[31m" is not valid' in result.stderr
    assert "\x1b" not in result.stderr and "\x00" not in result.stderr
    # a free-text value shown in the table: it went out raw
    conf.write_text("loadBalancerHistoryPath=/tmp/h\x1b[31m\x07\n", encoding="utf-8")
    shown = ballast("config", "show", "--config", str(conf), "--changed")
    assert shown.returncode == 0, shown.stderr
    assert "/tmp/h\\x1b[31m\\x07" in shown.stdout and "\x1b" not in shown.stdout
    conf.write_text("lo\x1bbalancer=1\n", encoding="utf-8")
    unused = ballast("config", "show", "--config", str(conf))
    assert unused.returncode == 0
    assert "lo\\x1bbalancer" in unused.stderr and "\x1b" not in unused.stderr


def test_show_refuses_what_a_server_would_refuse(ballast: Run) -> None:
    """An unknown split algorithm or a store URL no server can open fails here too, with the
    setting's source, rather than being shown as if it would work."""
    algorithm = ballast(
        "config", "show", "--set", "supportedNamespaceBundleSplitAlgorithms=range_equally_divide,x"
    )
    assert algorithm.returncode == 2
    assert '"x" is not one of: range_equally_divide' in algorithm.stderr
    store = ballast("config", "show", "--set", "metadataStoreUrl=bogus:")
    assert store.returncode == 2
    assert 'metadataStoreUrl (--set): invalid metadata store URL "bogus:"' in store.stderr
    env = {**os.environ, "BALLAST_metadataStoreUrl": "zk:h:1/c"}
    good = ballast("config", "show", "--changed", env=env)
    assert good.returncode == 0 and "zk:h:1/c" in good.stdout


def test_a_negative_partition_limit_is_no_limit_as_in_pulsar(ballast: Run) -> None:
    """Pulsar's broker.conf says a negative maxNumPartitionsPerPartitionedTopic disables the
    check; such a file was refused (exit 2)."""
    no_limit = ballast("config", "show", "--set", "maxNumPartitionsPerPartitionedTopic=-1")
    assert no_limit.returncode == 0, no_limit.stderr
