"""What a Prometheus query is allowed: light on purpose, as the command line writes it into its help without
loading the client."""

QUERY_TIMEOUT_S = 10.0
"""What the server is allowed per query (its `timeout` parameter); the client reads 2 s longer."""
