"""Ballast: the control plane of a bundle-sharded, load-balanced message-broker cluster,
compatible with Apache Pulsar's names, load data and admin API."""

__version__ = "0.1.0"
