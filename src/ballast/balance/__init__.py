"""Balancing decisions as pure functions: shedding (which bundles to move off which broker),
splitting (which bundles to cut) and placement (which broker gets a bundle), following Pulsar's
load managers rule for rule.

Every function here takes a frozen :class:`~ballast.balance.snapshot.LoadSnapshot`, the explicit
state the strategy kept from earlier runs, a small frozen config and (where Pulsar draws random
numbers) an injected ``random.Random``; it returns typed decisions, the new state and figures for
operators. Nothing here reads the clock, touches the store, logs, or mutates its inputs, so the
same code serves ``ballast decide``, the controller and the simulator.

Entry points:

- shedding: :func:`ballast.balance.shedding.registry.shedding_strategy` (one strategy by name)
  and :func:`ballast.balance.cycle.run_shedding_cycle` (the load manager's whole cycle);
- splitting: :func:`ballast.balance.split.find_bundles_to_split` and
  :func:`ballast.balance.split.run_split_cycle`;
- placement: :func:`ballast.balance.placement.select.select_broker_for_assignment`.
"""
