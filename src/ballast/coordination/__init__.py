"""Coordination recipes over the MetadataStore interface: leader election with epochs, the
broker registry, and bundle ownership. They run on every backend and in the simulator."""
