"""The broker's HTTP shell: Pulsar's lookup and admin REST API (v2), the internal endpoints the
controller's channel uses, Prometheus metrics and an OpenAPI document. Handlers are thin: parse,
validate, call the broker or the leader, map the answer to a status."""
