"""Inference engines: Prometheus parsing, per-engine normalizers, discovery, the scraper, startup logs."""
