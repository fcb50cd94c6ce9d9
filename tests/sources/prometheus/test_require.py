"""Without the binaries the Prometheus tests skip with the reason, unless CI asks for them
(GPUMEM_REQUIRE_PROMETHEUS=1, set by .ci/run): then a missing binary fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.prometheus.server import require_alertmanager, require_prometheus
from tests.sources.prometheus.victoria import require_victoria_metrics

CI_RUN = Path(__file__).resolve().parents[3] / ".ci" / "run"


def test_missing_binaries_skip_with_the_reason(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("GPUMEM_REQUIRE_PROMETHEUS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="prometheus and promtool not on PATH"):
        require_prometheus()


def test_ci_turns_the_skip_into_a_failure(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("GPUMEM_REQUIRE_PROMETHEUS", "1")
    with pytest.raises(pytest.fail.Exception, match="GPUMEM_REQUIRE_PROMETHEUS=1 but prometheus and promtool"):
        require_prometheus()


def test_ci_installs_prometheus_and_requires_it_before_the_readme_command():
    text = CI_RUN.read_text(encoding="utf-8")
    install = text.index("apt-get install -y --no-install-recommends prometheus ")
    packages = text[install:].splitlines()[0].split()
    assert {"prometheus", "prometheus-alertmanager", "victoria-metrics"} <= set(packages)
    assert "command -v victoria-metrics" in text and "command -v vmalert" in text
    required = text.index("export GPUMEM_REQUIRE_PROMETHEUS=1")
    assert install < required < text.index("python3 -m pip install '.[test]' && python3 -m pytest -q")


def test_a_missing_alertmanager_skips_or_fails_in_ci(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("GPUMEM_REQUIRE_PROMETHEUS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="prometheus-alertmanager not on PATH"):
        require_alertmanager()
    monkeypatch.setenv("GPUMEM_REQUIRE_PROMETHEUS", "1")
    with pytest.raises(pytest.fail.Exception, match="GPUMEM_REQUIRE_PROMETHEUS=1 but .*prometheus-alertmanager"):
        require_alertmanager()


def test_ci_installs_alertmanager():
    text = CI_RUN.read_text(encoding="utf-8")
    assert "prometheus-alertmanager" in text[text.index("apt-get install -y") :].splitlines()[0]
    assert "command -v prometheus-alertmanager" in text


def test_victoria_metrics_skips_or_fails_by_the_same_rule(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("GPUMEM_REQUIRE_PROMETHEUS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"victoria-metrics and vmalert not on PATH \(Debian: apt-get"):
        require_victoria_metrics()
    monkeypatch.setenv("GPUMEM_REQUIRE_PROMETHEUS", "1")
    with pytest.raises(pytest.fail.Exception, match="GPUMEM_REQUIRE_PROMETHEUS=1 but victoria-metrics and vmalert"):
        require_victoria_metrics()
