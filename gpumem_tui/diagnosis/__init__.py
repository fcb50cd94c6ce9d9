"""Plan versus actual: the middle layer. From a sample (what NVML, the host and the engines said) and
the catalog, it makes a plan per engine (`autoplan`), measures what each plan can be compared with
(`measured`, `compare`, `overlays`), keeps the recent past (`history`, `growth`) and turns the
differences into findings (`diagnose` runs the rules in `findings/`; `forensics.Investigation` is the
one judge the app and `check` feed). Pure: no I/O but reading a model's config.json from the local
Hugging Face cache. It may import `planner`, `sources` (what an engine's command line says), `catalog`
and the records at the package root; never `demo`, `app` or `cli` (LAYERS in tests/test_import_rules.py)."""
