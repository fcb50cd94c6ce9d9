"""Data collection: NVML, the host, the simulated node, and recordings."""
