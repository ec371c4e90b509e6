"""``ballast perf``: load generation and measurement with the official Pulsar client."""
