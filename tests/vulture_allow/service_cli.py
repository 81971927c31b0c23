"""Names in api/, cli/, core/, workers/ and migrations/ that no code calls or reads by name, because a framework
does, and why they stay (vulture reads each attribute below as a use of the name; it matches names, not modules).
"""
# ruff: noqa: B018  (each bare attribute below is the use vulture counts)

from __future__ import annotations


class _Names:
    """Stands for the module that defines a name (several define private or nested ones): reading an attribute
    here is the use vulture counts, and the module stays importable."""

    def __getattr__(self, name: str) -> None:
        return None


api, cli, core, workers, migrations = _Names(), _Names(), _Names(), _Names(), _Names()

# FastAPI calls these: uvicorn builds the app from its factory's dotted name, a decorator registers the rest.
api.create_app  # the application factory: `ackreplay serve` runs uvicorn "ackreplay.api.app:create_app"
api._timing  # @app.middleware("http"): each request's duration for /api/v1/metrics
api._service  # @app.exception_handler: a ServiceError → its status and {"error", "detail"}
api._validation  # @app.exception_handler: a request that does not validate → 422 invalid_request
api._http  # @app.exception_handler: Starlette's HTTPException → the same error body
api._database  # @app.exception_handler: a DBAPIError → 503 database_unavailable, 409 conflict or 500
api._orm  # @app.exception_handler: any other SQLAlchemy error (pool timeout, stale rows of a race)
# the routes, each registered by its @router decorator and called by FastAPI for its path
api.favicon  # GET /favicon.ico
api.docs_redirect  # GET /docs
api.docs_page  # GET /api/v1/docs
api.create_batch  # POST /api/v1/batches
api.get_batch  # GET /api/v1/batches/{batch_id}
api.upload  # POST /api/v1/captures
api.list_captures  # GET /api/v1/captures
api.get_capture  # GET /api/v1/captures/{capture_id}
api.delete_capture  # DELETE /api/v1/captures/{capture_id}
api.list_flows  # GET /api/v1/captures/{capture_id}/flows
api.get_flow  # GET /api/v1/captures/{capture_id}/flows/{flow_id}
api.download_acks  # GET /api/v1/captures/{capture_id}/flows/{flow_id}/acks
api.flow_graph  # GET /api/v1/captures/{capture_id}/flows/{flow_id}/graph
api.plotly_js  # GET /dashboard/vendor/plotly.min.js
api.asset  # GET /dashboard/{path}
api.ready  # GET /api/v1/ready
api.metrics  # GET /api/v1/metrics
api.get_quota  # GET /api/v1/quota
api.create_run  # POST /api/v1/runs
api.run_document  # GET /api/v1/runs/{run_id}/document
api.get_run_capture  # GET /api/v1/runs/{run_id}/captures/{capture_id}
api.run_skipped  # GET /api/v1/runs/{run_id}/captures/{capture_id}/skipped
api.run_capture_limits  # GET /api/v1/runs/{run_id}/captures/{capture_id}/limits
api.run_scores  # GET /api/v1/runs/{run_id}/scores
api.run_series  # GET /api/v1/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/series
api.run_decisions  # GET …/flows/{flow_id}/decisions (of a run's capture)
api.run_diagnostics  # GET …/flows/{flow_id}/diagnostics
api.run_path  # GET …/flows/{flow_id}/path
api.run_limits  # GET …/flows/{flow_id}/limits
api.run_graph  # GET …/flows/{flow_id}/graph
api.run_whatif  # POST …/flows/{flow_id}/whatif

# pydantic reads these: a model's configuration, and the response models' fields, which FastAPI serialises
# (and documents in the OpenAPI schema) by name.
api.model_config  # pydantic's (and pydantic-settings') class configuration: api.schemas, core.config
api.run_url  # UploadOut
api.reconstruction_sound  # FlowOut
api.spurious_retransmissions  # FlowOut
api.capture_position  # FlowOut
api.bps  # SampleOut
api.interval_us  # SampleOut
api.cause  # SampleOut
api.ack_compression_share  # DiagnosticsOut
api.utilisation  # WhatIfResultOut
api.queue_delay_mean_s  # WhatIfResultOut
api.queue_delay_p95_s  # WhatIfResultOut
api.cross_traffic  # WhatIfOut
api.largest_samples  # DiagnosticsOut
api.dispersion_capacity_bps  # DiagnosticsOut
api.dispersion_from  # DiagnosticsOut
api.ack_timing_seen_at  # DiagnosticsOut
api.path_group  # PathOut
api.intervals  # LimitsOut
api.ties  # BoardEntry
api.resamples  # LeaderboardOut
api.resampled  # LeaderboardOut
api.min_flows  # LeaderboardOut
api.full_resolution  # GraphOut
api.first_frame  # EpisodeOut (the graph's episodes: the packets behind them)
api.last_frame  # EpisodeOut
api.retransmission_frames  # EpisodeOut
api.tasks_done  # RunStatusOut's progress
api.tasks_total  # RunStatusOut's progress
api.skipped_flows  # RunStatusOut's captures
api.skipped_total  # RunStatusOut's captures
api.skipped_counts  # RunStatusOut's captures
api.captures_total  # RunStatusOut, BatchCreated, BatchOut, RunSummaryOut
api.rejected_total  # BatchCreated, BatchOut
api.timings_s  # RunStatusOut
api.capture_names  # RunSummaryOut
api.ackreplay_version  # RunDocumentOut
api.ideal_segments  # DecisionOut
api.won_flows  # LeaderboardOut's estimators
api.composite_error  # ScoreboardOut's captures
api.mean_rank  # ScoreboardOut's estimators
api.place  # ScoreboardOut's estimators

# uvicorn calls this on its protocol (api.http_protocol.TimedH11Protocol) for a request it cannot parse.
api.send_400_response

# Typer calls these: each registered by its decorator, run by the command line.
cli._root  # @app.callback(): `ackreplay --version` and the commands' common help
cli.token_create  # `ackreplay token create`
cli.token_list  # `ackreplay token list`
cli.token_revoke  # `ackreplay token revoke`
cli.quota_set  # `ackreplay quota set`
# cli.main.COMMANDS names these by module and attribute; the process imports the one it runs (cli.main.build).
cli.compare  # `ackreplay compare`
cli.list_estimators  # `ackreplay estimators`
cli.report  # `ackreplay report`
cli.migrate  # `ackreplay migrate`
cli.serve  # `ackreplay serve`
cli.list_commands  # click calls it on cli.main._Index (the root's command list for --help)
cli.get_command  # click calls it on cli.main._Index, for each listed command
cli.__dir__  # Python calls it for dir(ackreplay.cli.main): `app`, built on first use, listed among the names

# SQLAlchemy calls or reads these.
core._pragmas  # @event.listens_for(engine, "connect"): SQLite's WAL and foreign keys on each connection
core._run_jobs  # @event.listens_for(Session, "after_commit"): the work queued for after the commit
core._drop_jobs  # @event.listens_for(Session, "after_rollback"): that work dropped, the rollback's run
core.type_annotation_map  # the declarative base's Python type → column type map
# columns of the schema (migrations/versions) that only SQL and the tests read back
core.ingest_seconds  # run_captures: how long the capture's ingest took
core.queued_at  # run_captures: when the capture joined the run
core.attempts  # tasks: how many times a worker claimed the task
core.redispatches  # tasks: how many times lost work was dispatched again
# Celery reads its configuration by attribute name
core.broker_connection_retry_on_startup  # the API's Celery client: wait for Redis at start instead of failing
core.broker_transport_options  # the API's Celery client: Redis' visibility timeout

# Celery calls this when the worker is ready (@worker_ready.connect).
workers._requeue_stale  # each worker re-dispatches lost work at start, then sweeps periodically
workers._preload_kernels  # (Celery signal handler) each pool process loads the compiled kernels as it starts

# Alembic reads each revision module's identifiers and calls its downgrade (upgrade: migrations/env.py).
migrations.revision
migrations.down_revision
migrations.branch_labels
migrations.depends_on
migrations.downgrade
core._unlimited  # pydantic calls the settings validator that lifts a limit given as "none"
# numba calls these on the listener ``cli.collection.collect_while_compiling`` registers for its "numba:compile" event
cli.on_start  # a kernel starts compiling: the garbage collector back on
cli.on_end  # (the event's end: nothing to do)
