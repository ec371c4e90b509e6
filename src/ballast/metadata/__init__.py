"""The metadata store: one interface (``store``), backends for memory, a durable SQLite file
and ZooKeeper, the value codec, and Pulsar's path layout (``paths``)."""
