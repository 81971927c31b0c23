"""Prometheus metrics of the API process."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

UPLOADS = Counter("ackreplay_uploads_total", "captures uploaded (new ones)")
RUNS = Counter("ackreplay_runs_total", "runs started through POST /runs")
REQUESTS = Histogram("ackreplay_request_seconds", "request latency", ["route", "method", "status"])
#: The methods a request is counted under by name; any other is ``other``. A label per method sent made the
#: metrics grow with every made-up method (500 requests without a token: 850 kB more of /metrics, for good).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe(route: str, method: str, status: int, seconds: float) -> None:
    """Count a request under its route's template (never its raw path), a known method and its status."""
    REQUESTS.labels(route, method if method in METHODS else "other", status).observe(seconds)
