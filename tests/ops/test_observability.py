"""The observability files under docker/ name only series the code exports.

``promtool`` and a maintained Grafana-schema validator are not installable here, so: the alert
rules are parsed as Prometheus rule groups and the dashboard as a Grafana dashboard (structure),
and every ``personatree_*`` series in an expression must be one the code exports, found by reading
the ``workers.metrics`` calls in the source and the collectors of ``personatree_site.ops``.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
ALERTS = DOCKER / "prometheus" / "alerts.yml"
PROMETHEUS = DOCKER / "prometheus" / "prometheus.yml"
DASHBOARD = DOCKER / "grafana" / "personatree.json"
SOURCES = ("workers", "memory", "serving", "personatree_site")
# Series named in a query that are not ours: Prometheus' own and the Ray nodes' metrics agents.
FOREIGN = re.compile(r"^(up|ray_serve_[a-z0-9_]+)$")
_SERIES = re.compile(r"\b([a-z_][a-z0-9_]*_[a-z0-9_]+)\b(?=\s*[{\[)])")
_FUNCTIONS = {"histogram_quantile", "clamp_min", "clamp_max", "label_replace", "sum_over_time"}


def _metric_calls() -> dict[str, str]:
    """``{name: kind}`` of every ``metrics.observe("name", ...)`` / ``metrics.incr("name", ...)``."""
    found: dict[str, str] = {}
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("observe", "incr")
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "metrics"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    found[node.args[0].value] = "histogram" if node.func.attr == "observe" else "counter"
    return found


def exported_series() -> set[str]:
    """Every series name (with its ``_total`` / ``_bucket`` / ``_sum`` / ``_count``) the code exports."""
    from personatree_site.ops import backlog
    from personatree_site.ops import metrics as ops_metrics
    from workers.metrics import PREFIX

    names: set[str] = {backlog.BACKLOG, backlog.OLDEST}
    kinds = {PREFIX + name: kind for name, kind in _metric_calls().items()}
    kinds[ops_metrics.REQUESTS._name] = "counter"
    kinds[ops_metrics.LATENCY._name] = "histogram"
    for name, kind in kinds.items():
        suffixes = ("_total",) if kind == "counter" else ("_bucket", "_sum", "_count")
        names.update(name + suffix for suffix in suffixes)
    return names


def series_in(expr: str) -> set[str]:
    """Series names a PromQL expression selects (identifiers followed by ``{``, ``[`` or ``)``)."""
    return {name for name in _SERIES.findall(expr) if name not in _FUNCTIONS}


def _alert_rules() -> list[dict]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _dashboard_queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_source_scan_finds_the_worker_series():
    names = exported_series()
    for name in (
        "personatree_chunks_failed_total",
        "personatree_dispatch_model_seconds_bucket",
        "personatree_task_runs_total",
        "personatree_http_requests_total",
    ):
        assert name in names
    assert "personatree_chunks_failed_bucket" not in names  # a counter has no buckets


def test_the_expression_parser_sees_every_series():
    expr = 'sum(rate(a_total{x="1"}[5m])) / clamp_min(sum(rate(b_bucket[5m])), 1e-9) > 0 and up == 0'
    assert series_in(expr) == {"a_total", "b_bucket"}


def test_alert_rules_are_valid_rule_groups():
    doc = yaml.safe_load(ALERTS.read_text())
    groups = doc["groups"]
    assert len({g["name"] for g in groups}) == len(groups)
    names = set()
    for group in groups:
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
            assert rule["alert"] not in names
            names.add(rule["alert"])
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            assert rule["annotations"]["summary"]
            if "for" in rule:
                assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
            assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]


@pytest.mark.parametrize(
    "needle",
    [
        "personatree_queue_oldest_pending_age_seconds",
        "personatree_chunks_failed_total",
        "personatree_dispatch_model_seconds_bucket",
    ],
)
def test_alerts_cover_backlog_age_failure_rate_and_listener_latency(needle):
    assert any(needle in series_in(rule["expr"]) for rule in _alert_rules())


def test_every_alert_names_exported_series():
    exported = exported_series()
    for rule in _alert_rules():
        named = series_in(rule["expr"]) | ({"up"} if re.search(r"\bup\{", rule["expr"]) else set())
        assert named, f"{rule['alert']}: no series in {rule['expr']!r}"
        unknown = {n for n in named if n not in exported and not FOREIGN.match(n)}
        assert not unknown, f"{rule['alert']} names series the code does not export: {unknown}"


def test_dashboard_is_a_grafana_dashboard():
    dashboard = json.loads(DASHBOARD.read_text())
    for key in ("uid", "title", "schemaVersion", "panels", "time"):
        assert key in dashboard, key
    assert isinstance(dashboard["schemaVersion"], int)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        assert panel["type"] in {"timeseries", "stat", "gauge", "table"}
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs))
        for source in [panel["datasource"]] + [t["datasource"] for t in panel["targets"]]:
            assert source["type"] == "prometheus"
            assert source["uid"].strip("${}") in variables  # the datasource is chosen at import


def test_every_dashboard_query_names_exported_series():
    exported = exported_series()
    for title, expr in _dashboard_queries():
        named = series_in(expr) | ({"up"} if re.search(r"\(up\)", expr) else set())
        assert named, f"{title}: no series in {expr!r}"
        unknown = {n for n in named if n not in exported and not FOREIGN.match(n)}
        assert not unknown, f"panel {title!r} names series the code does not export: {unknown}"


def test_prometheus_scrapes_web_the_celery_exporters_and_ray():
    config = yaml.safe_load(PROMETHEUS.read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    ports = {name: {sd["port"] for sd in job["dns_sd_configs"]} for name, job in jobs.items()}
    assert ports == {"personatree-web": {8000}, "personatree-celery": {9808}, "ray": {8080}}
    assert jobs["personatree-web"]["metrics_path"] == "/metrics"
    assert jobs["personatree-web"]["authorization"]["credentials_file"]


def test_prometheus_series_carry_no_tenant_label(caplog):
    """One series per tenant would grow every scrape with the tenants; the metric's log line keeps it."""
    from personatree_site.ops.metrics import exposition
    from workers import metrics

    with caplog.at_level(logging.DEBUG, logger="personatree.metrics"):
        metrics.incr("task_runs", task="tests.ops.cardinality", tenant="4242", outcome="ok")
    text = exposition()[0].decode()
    line = next(li for li in text.splitlines() if 'task="tests.ops.cardinality"' in li)
    # Label values only: a float sample elsewhere may well contain the digits 4242.
    assert "tenant=" not in text and '"4242"' not in text, line
    (logged,) = [r.args[2] for r in caplog.records if r.name == "personatree.metrics"]
    assert logged["tenant"] == "4242"


def _buckets_of(series: str) -> tuple[float, ...]:
    """The finite bucket bounds the code gives the histogram behind ``<name>_bucket``."""
    import prometheus_client

    from personatree_site.ops import metrics as ops_metrics
    from workers.metrics import BUCKETS, PREFIX

    name = series.removesuffix("_bucket")
    if name == ops_metrics.LATENCY._name:
        return ops_metrics.LATENCY_BUCKETS
    bounds = BUCKETS.get(name.removeprefix(PREFIX), prometheus_client.Histogram.DEFAULT_BUCKETS)
    return tuple(b for b in bounds if b != float("inf"))


_QUANTILE_ALERT = re.compile(
    r"histogram_quantile\(.*?\b(personatree_[a-z0-9_]+_bucket)\b.*\)\s*>\s*([0-9.]+)"
)


def test_a_quantile_alert_can_fire():
    """histogram_quantile never reads above the highest finite bucket: a threshold must be below it."""
    checked = 0
    for rule in _alert_rules():
        match = _QUANTILE_ALERT.search(rule["expr"])
        if match is None:
            continue
        series, threshold = match.group(1), float(match.group(2))
        assert max(_buckets_of(series)) > threshold, f"{rule['alert']} can never fire: {series} stops below"
        assert threshold in _buckets_of(series), f"{rule['alert']}: put a bucket bound at {threshold}"
        checked += 1
    assert checked  # PersonaTreeListenerSlow at least
