"""The exporter: each sample judged as the TUI judges it, published for Prometheus to scrape.

It is a front end beside `app`: the CLI gives it a Feed and a Judge; `evaluation.Evaluator` samples and
judges on the refresh interval with the same `Investigation` the app's refresh worker feeds, and keeps the
latest result whole; a scrape (`server`) turns that result into metric families (`measured`, `planned`)
and never samples. It may import `diagnosis`, `sources` and the records below them; never `app`, `demo`
or `cli` (LAYERS in tests/test_import_rules.py). It loads neither Textual nor Rich."""
