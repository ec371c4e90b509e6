"""Configuration: Pulsar's keys and defaults, file/env/--set precedence, warnings, errors."""

from __future__ import annotations

import pytest

from ballast.model.config import (
    SETTINGS_BY_KEY,
    ConfigError,
    PlacementConfig,
    ReportConfig,
    SheddingConfig,
    SplitConfig,
    ThresholdShedderConfig,
    TransferShedderConfig,
    decode_conf,
    defaults,
    load_settings,
)


def test_pulsar_defaults() -> None:
    s = defaults()
    assert s["loadBalancerBrokerOverloadedThresholdPercentage"] == 85
    assert s["loadBalancerSheddingGracePeriodMinutes"] == 30
    assert s["loadBalancerNamespaceBundleMaxBandwidthMbytes"] == 100
    assert s["loadBalancerHistoryResourcePercentage"] == 0.9
    assert s["loadBalancerMemoryResourceWeight"] == 0.0
    assert s["loadBalancerOverrideBrokerNicSpeedGbps"] is None
    assert s["loadBalancerLoadSheddingStrategy"] == "threshold"
    assert s["defaultNumberOfNamespaceBundles"] == 4
    assert s["loadBalancerBrokerLoadTargetStd"] == 0.25


def test_precedence_file_then_env_then_set() -> None:
    conf = "# comment\nloadBalancerSheddingIntervalMinutes=5\nloadBalancerBrokerMaxTopics : 10\n"
    loaded = load_settings(
        conf_text=conf,
        environ={"BALLAST_loadBalancerSheddingIntervalMinutes": "7", "PATH": "/bin"},
        overrides=["loadBalancerBrokerMaxTopics=20"],
    )
    s = loaded.settings
    assert s["loadBalancerSheddingIntervalMinutes"] == 7
    assert (
        s.source("loadBalancerSheddingIntervalMinutes")
        == "env BALLAST_loadBalancerSheddingIntervalMinutes"
    )
    assert s["loadBalancerBrokerMaxTopics"] == 20
    assert s.source("loadBalancerBrokerMaxTopics") == "--set"
    assert s.source("loadBalancerEnabled") == "default"
    assert loaded.warnings == ()


def test_a_broker_conf_is_read_as_java_properties() -> None:
    conf = (
        "\ufeffloadBalancerSheddingIntervalMinutes 5\n"  # a byte-order mark, then a space
        "! a comment\n"
        "loadBalancerSheddingExcludedNamespaces=a/b,\\\n"
        "    c/d\n"  # continued
        "loadBalancerLoadSheddingStrategy : \\u0074hreshold\n"  # an escape
        "loadBalancerBrokerMaxTopics=7\n"
    )
    loaded = load_settings(conf_text=conf)
    s = loaded.settings
    assert s["loadBalancerSheddingIntervalMinutes"] == 5
    assert s.source("loadBalancerSheddingIntervalMinutes") == "broker.conf:1"
    assert s["loadBalancerSheddingExcludedNamespaces"] == ("a/b", "c/d")
    assert s["loadBalancerLoadSheddingStrategy"] == "threshold"
    assert s.source("loadBalancerBrokerMaxTopics") == "broker.conf:6"  # lines as in the file
    assert loaded.warnings == ()


def test_a_malformed_escape_names_the_file_and_line() -> None:
    for bad, message in (
        ("x=\\u12\n", 'conf:2: malformed \\u escape "\\u12"'),  # Java refuses it too
        ("x=\\uZZZZ\n", 'conf:2: malformed \\u escape "\\uZZZZ"'),
        ("loadBalancerHistoryPath=\\ud800\n", "conf:2: a \\u escape leaves half a surrogate pair"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_settings(conf_text="a=1\n" + bad, conf_name="conf")
        assert str(caught.value) == f"ConfigError: {message}"
    paired = load_settings(conf_text="loadBalancerHistoryPath=\\ud83d\\ude00\n").settings
    assert paired["loadBalancerHistoryPath"] == "\U0001f600"  # a whole pair is one character


def test_errors_name_the_line_as_java_counts_lines() -> None:
    """NEL, form feed and the like are characters of a value, not line ends."""
    text = (
        "loadBalancerHistoryPath=a\x85b\nbindAddress=x\x1cy\x0cz\r\n"
        "loadBalancerSheddingEnabled=maybe\n"
    )
    with pytest.raises(ConfigError, match=r"\(from broker.conf:3\)"):
        load_settings(conf_text=text, conf_name="broker.conf")


def test_a_conf_file_in_iso_8859_1_decodes() -> None:
    latin = "# caf\xe9\nloadBalancerSheddingIntervalMinutes=5\n".encode("iso-8859-1")
    assert decode_conf(latin) == "# caf\xe9\nloadBalancerSheddingIntervalMinutes=5\n"
    assert decode_conf("# café".encode()) == "# café"  # UTF-8 where it is
    # A byte order mark goes, also before a stray ISO-8859-1 byte further down.
    marked = b"\xef\xbb\xbfloadBalancerSheddingIntervalMinutes=3\n# caf\xe9\n"
    assert decode_conf(marked) == "loadBalancerSheddingIntervalMinutes=3\n# caf\xe9\n"


def test_blank_value_keeps_the_default() -> None:
    s = load_settings(conf_text="loadBalancerBrokerMaxTopics=\n").settings
    assert s["loadBalancerBrokerMaxTopics"] == 50000


def test_unknown_key_warns_with_the_nearest_known_key() -> None:
    loaded = load_settings(overrides=["loadBalancerSheddingIntervalMinute=3"])
    assert len(loaded.warnings) == 1
    assert "did you mean loadBalancerSheddingIntervalMinutes?" in loaded.warnings[0]


def test_the_commands_own_variables_are_not_settings() -> None:
    environ = {"BALLAST_DEBUG": "1", "BALLAST_ADMIN_URL": "http://b:8080", "BALLAST_x": "1"}
    warnings = load_settings(environ=environ).warnings
    assert len(warnings) == 1 and "unknown key x in env BALLAST_x" in warnings[0]


def test_strict_loading_refuses_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match="did you mean loadBalancerSheddingIntervalMinutes"):
        load_settings(overrides=["loadBalancerSheddingIntervalMinute=3"], strict=True)
    with pytest.raises(ConfigError, match=r"unknown key colour in --set$"):
        load_settings(overrides=["colour=blue"], strict=True)


def test_foreign_keys_of_a_real_broker_conf_are_summarised() -> None:
    conf = "bookkeeperClientTimeoutInSeconds=30\nmanagedLedgerDefaultEnsembleSize=2\n"
    loaded = load_settings(conf_text=conf, conf_name="broker.conf")
    assert loaded.warnings == (
        "2 key(s) in broker.conf not used by Ballast: bookkeeperClientTimeoutInSeconds, "
        "managedLedgerDefaultEnsembleSize",
    )


def test_keys_of_pulsars_own_broker_conf_are_not_taken_for_typos() -> None:
    """``brokerServicePortTls`` is Pulsar's, not a misspelt ``brokerServicePort``: in a file it
    joins the summary; a real typo in the same file still gets its hint."""
    conf = "brokerServicePortTls=6651\nbindAddresses=\nbrokerServicePrt=6650\n"
    loaded = load_settings(conf_text=conf, conf_name="broker.conf")
    assert loaded.warnings == (
        "unknown key brokerServicePrt in broker.conf:3 ignored; did you mean brokerServicePort?",
        "2 key(s) in broker.conf not used by Ballast: brokerServicePortTls, bindAddresses",
    )


def test_the_old_zookeeper_keys_stand_in_for_the_store_keys_as_in_pulsar() -> None:
    """Pulsar 2.x's broker.conf names its ZooKeeper in ``zookeeperServers``: Pulsar reads it
    as ``zk:`` + the value while ``metadataStoreUrl`` is blank, and a
    ``zooKeeperSessionTimeoutMillis`` above 0 as the session timeout."""
    conf = "zookeeperServers=zk1:2181,zk2:2181\nzooKeeperSessionTimeoutMillis=45000\n"
    loaded = load_settings(conf_text=conf, conf_name="old.conf")
    assert loaded.settings.get_str("metadataStoreUrl") == "zk:zk1:2181,zk2:2181"
    assert loaded.settings.source("metadataStoreUrl") == "old.conf:1 (via zookeeperServers)"
    assert loaded.settings.get_int("metadataStoreSessionTimeoutMillis") == 45000
    assert [w.split(" is ")[0] for w in loaded.warnings] == [
        "zookeeperServers",
        "zooKeeperSessionTimeoutMillis",
    ]
    # metadataStoreUrl, when given, wins; a blank one does not count as given.
    for url, expected in (("zk:new:2181", "zk:new:2181"), ("", "zk:zk1:2181,zk2:2181")):
        both = load_settings(conf_text=f"metadataStoreUrl={url}\n{conf}")
        assert both.settings.get_str("metadataStoreUrl") == expected
    # Pulsar's own broker.conf lists both at their defaults: nothing changes, no warning.
    stock = "metadataStoreUrl=\nzookeeperServers=\nzooKeeperSessionTimeoutMillis=-1\n"
    loaded = load_settings(conf_text=stock)
    assert loaded.settings.get_str("metadataStoreUrl") == "memory:"
    assert loaded.settings.get_int("metadataStoreSessionTimeoutMillis") == 30000
    assert loaded.warnings == ()


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (
            "loadBalancerSheddingEnabled=yes",
            'loadBalancerSheddingEnabled="yes" is not a valid boolean',
        ),
        (
            "loadBalancerBrokerMaxTopics=ten",
            'loadBalancerBrokerMaxTopics="ten" is not a valid integer',
        ),
        ("loadBalancerSheddingIntervalMinutes=1_0", '"1_0" is not a valid integer'),
        ("loadBalancerBrokerMaxTopics=１２", "is not a valid integer"),  # not ASCII digits
        (
            "loadBalancerNamespaceBundleMaxMsgRate=99999999999999999999",
            "is not a valid integer (beyond a Java int, which Pulsar reads it as)",
        ),
        # Pulsar's field is an int: a broker would not start with it
        ("loadBalancerBrokerMaxTopics=3000000000", "(beyond a Java int"),
        ("loadBalancerBrokerMaxTopics=-2147483649", "(beyond a Java int"),
        ("namespaceBundleUnloadingTimeoutMs=9223372036854775808", "(beyond a Java long"),
        ("loadBalancerHistoryResourcePercentage=NaN", "must be finite"),
        ("loadBalancerHistoryResourcePercentage=-Infinity", "must be finite"),
        ("loadBalancerCPUResourceWeight=0x1p99999", "must be finite"),  # no OverflowError
        ("loadBalancerBrokerMaxTopics=" + "9" * 5000, "(beyond a Java int"),  # no ValueError
        # Java's Double.parseDouble: no "nan", no "1_000", no digits of other scripts
        ("loadBalancerHistoryResourcePercentage=nan", '"nan" is not a valid'),
        ("loadBalancerCPUResourceWeight=1_000", '"1_000" is not a valid'),
        ("loadBalancerCPUResourceWeight=\u0661", "is not a valid"),
        ("loadBalancerCPUResourceWeight=0x1.8", "is not a valid"),  # hex needs an exponent
        ("loadBalancerSheddingIntervalMinutes=0", "must be at least 1"),
        ("webServicePort=65536", 'webServicePort="65536" must be at most 65535'),
        # 0 would bind a free port but register the broker as reachable at port 0
        ("webServicePort=0", 'webServicePort="0" must be at least 1'),
        ("brokerServicePort=0", 'brokerServicePort="0" must be at least 1'),
        ("loadBalancerLoadSheddingStrategy=best", "is not one of: overload, threshold"),
        # each item of a list with choices is one of them (a typo would make no split run)
        (
            "supportedNamespaceBundleSplitAlgorithms=range_equally_divide,range_equaly_divide",
            '"range_equaly_divide" is not one of: range_equally_divide',
        ),
        ("noequals", "is not key=value"),
        # names that become steps of metadata paths: the controller died on these, and a
        # broker ran as leader without one
        ("clusterName=..", 'clusterName=".." is not valid: letters, digits and "-=:._"'),
        ("clusterName=a/b", 'clusterName="a/b" is not valid'),
        ("clusterName=a\x01b", "is not valid"),
        ("advertisedAddress=a/b", 'advertisedAddress="a/b" is not valid: a host name'),
        ("advertisedAddress=.", "is not valid"),
    ],
)
def test_bad_values_name_key_value_and_type(pair: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(overrides=[pair])
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "pair",
    ["clusterName=us-west:1", "clusterName=a.b_c=d", "advertisedAddress=broker-1.example.com"],
)
def test_names_pulsar_allows_are_taken(pair: str) -> None:
    key, _, value = pair.partition("=")
    assert load_settings(overrides=[pair]).settings[key] == value


def test_a_long_setting_takes_what_a_java_long_holds() -> None:
    loaded = load_settings(
        overrides=[
            "namespaceBundleUnloadingTimeoutMs=3000000000",
            "loadBalancerBrokerMaxTopics=2147483647",
        ]
    )
    assert loaded.settings["namespaceBundleUnloadingTimeoutMs"] == 3_000_000_000
    assert loaded.settings["loadBalancerBrokerMaxTopics"] == 2**31 - 1


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.5", 0.5), (" 2 ", 2.0), ("1e2", 100.0), ("1.5f", 1.5), ("3D", 3.0), (".25", 0.25),
     ("0x1p-1", 0.5), ("0x1.8P1d", 3.0), ("+7.", 7.0)],
)  # fmt: skip
def test_decimal_settings_read_as_java_reads_a_double(text: str, value: float) -> None:
    loaded = load_settings(overrides=[f"loadBalancerCPUResourceWeight={text}"])
    assert loaded.settings["loadBalancerCPUResourceWeight"] == value


def test_pulsar_class_names_are_accepted() -> None:
    s = load_settings(
        overrides=[
            "loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
            "loadBalancerLoadPlacementStrategy=org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight",
        ]
    ).settings
    assert s["loadBalancerLoadSheddingStrategy"] == "overload"
    assert s["loadBalancerLoadPlacementStrategy"] == "least_resource_usage_with_weight"


def test_legacy_misspelled_weight_is_honoured() -> None:
    s = load_settings(overrides=["loadBalancerBandwithInResourceWeight=0.5"]).settings
    assert s["loadBalancerBandwidthInResourceWeight"] == 0.5
    both = load_settings(
        overrides=[
            "loadBalancerBandwithInResourceWeight=0.5",
            "loadBalancerBandwidthInResourceWeight=0.7",
        ]
    ).settings
    assert both["loadBalancerBandwidthInResourceWeight"] == 0.7
    # Pulsar's getter: the new key set to its default 1.0 does not hide the old key's value
    default_new = load_settings(
        overrides=[
            "loadBalancerBandwidthInResourceWeight=1.0",
            "loadBalancerBandwithInResourceWeight=2.0",
        ]
    ).settings
    assert default_new["loadBalancerBandwidthInResourceWeight"] == 2.0


def test_the_heap_memory_weight_is_ignored_as_pulsar_ignores_it() -> None:
    loaded = load_settings(overrides=["loadBalancerMemoryResourceWeight=1"])
    assert any("ignored" in w and "MemoryResourceWeight" in w for w in loaded.warnings)
    weights = ReportConfig.from_settings(loaded.settings).weights
    assert weights.memory == 0.0 and weights.cpu == 1.0


def test_component_configs_convert_units() -> None:
    s = load_settings(
        overrides=["loadBalancerSheddingGracePeriodMinutes=2", "loadBalancerEnabled=false"]
    ).settings
    shedding = SheddingConfig.from_settings(s)
    assert shedding.grace_period_ms == 120_000 and not shedding.enabled
    assert ThresholdShedderConfig.from_settings(s).min_throughput_bytes == 10 * 1024 * 1024
    assert ThresholdShedderConfig.from_settings(s).threshold == 0.10
    assert ReportConfig.from_settings(s).update_max_interval_ms == 15 * 60_000
    assert SplitConfig.from_settings(s).max_bandwidth_bytes == 100 * 1024 * 1024
    assert not SplitConfig.from_settings(s).enabled
    assert PlacementConfig.from_settings(s).overloaded_threshold == 0.85
    assert TransferShedderConfig.from_settings(s).shedding_delay_ms == 180_000


def test_every_setting_default_parses_as_its_own_kind() -> None:
    from ballast.model.config.loader import parse_value

    for setting in SETTINGS_BY_KEY.values():
        if setting.default is None or setting.default == "" or isinstance(setting.default, tuple):
            continue
        text = (
            str(setting.default).lower()
            if isinstance(setting.default, bool)
            else str(setting.default)
        )
        assert parse_value(setting, text) == setting.default, setting.key
