"""``ackreplay``: replay real TCP ACK streams through Westwood-family bandwidth estimators."""

from __future__ import annotations

import typer

from cli.ingest_cmds import acks, flows
from cli.score_cmd import score
from cli.service_cmds import migrate, quota_app, serve, token_app, worker
from cli.warmup import warmup

app = typer.Typer(
    name="ackreplay",
    help="How would each TCP bandwidth estimator have behaved on this real traffic?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(score)
app.command()(flows)
app.command()(acks)
app.command()(serve)
app.command()(worker)
app.command()(migrate)
app.command()(warmup)
app.add_typer(token_app, name="token")
app.add_typer(quota_app, name="quota")


if __name__ == "__main__":
    app()
