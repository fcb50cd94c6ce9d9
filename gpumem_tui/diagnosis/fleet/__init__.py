"""The fleet's judge: every rule about a fleet read from Prometheus (its findings, its plans, which nodes the
reader looks at closer, when a node's data is stale). `sources/prometheus/` reads and joins; it is handed the
rules it needs from here (reading.py). docs/design/fleet.md says why the rules are the ones they are."""
