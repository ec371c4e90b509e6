"""The pure model: names, bundles, load data, policies and configuration. No I/O, no clock."""
