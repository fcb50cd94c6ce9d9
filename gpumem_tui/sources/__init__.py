"""Data collection: NVML, the host, inference-engine endpoints, the simulated node, and recordings."""
