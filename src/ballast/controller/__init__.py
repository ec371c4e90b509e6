"""The controller: runs on the elected leader; one event queue serialises every cluster
decision (load management, placement, namespaces, membership) and a command channel carries
them to the brokers, stamped with the leader's epoch."""
