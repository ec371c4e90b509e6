"""The broker: its identity and registration, the bundles it owns and the topics it serves,
its load reports, and topic lookup (the namespace service)."""
