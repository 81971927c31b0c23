"""Prometheus metrics of the API process."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

UPLOADS = Counter("ackreplay_uploads_total", "captures uploaded (new ones)")
RUNS = Counter("ackreplay_runs_total", "runs started through POST /runs")
REQUESTS = Histogram("ackreplay_request_seconds", "request latency", ["route", "method", "status"])
