"""a capture's skipped flows kept as a summary: the first 100, how many, how many per kind of reason; flows
without their redundant capture_id index

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 18:30:00

Existing runs keep every skipped flow in ``run_captures.skipped`` with ``skipped_total`` null, and are read
as they are (``core.skipped_flows``). ``flows`` keeps ``uq_flow_capture_flow`` (capture_id, flow_id), which
finds a capture's flows: its own index of capture_id only slowed the writing of a million flows.

Downgrade: the schema before held every skipped flow in ``skipped``. A summary that holds them all (at most 100,
``skipped_total`` equal to the flows it names) reads the same without its total and counts, and is kept as it
is. A summary of more (the first 100 of ``skipped_total``) cannot become the full list without replanning the
capture, so the downgrade refuses while any is left, naming them: delete those captures first (``DELETE
/captures/{id}`` removes their runs' results), or stay on this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('run_captures', schema=None) as batch_op:
        batch_op.add_column(sa.Column('skipped_total', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('skipped_counts', sa.JSON(), nullable=True))
    with op.batch_alter_table('flows', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_flows_capture_id'))


#: Skipped flows a summary names (``core.skipped_flows.SKIPPED_SHOWN`` when this revision was written).
SHOWN = 100
#: Run captures a refused downgrade names.
NAMED = 5


def summarised_runs() -> list[tuple[str, str, int]]:
    """(run, capture, total) of every run capture whose summary holds fewer skipped flows than it counts."""
    rc = sa.table('run_captures', sa.column('run_id', sa.String), sa.column('capture_id', sa.String),
                  sa.column('skipped_total', sa.Integer), sa.column('skipped', sa.JSON))
    rows = op.get_bind().execute(sa.select(rc.c.run_id, rc.c.capture_id, rc.c.skipped_total, rc.c.skipped)
                                 .where(rc.c.skipped_total > SHOWN).order_by(rc.c.run_id, rc.c.capture_id))
    return [(run, cap, total) for run, cap, total, skipped in rows if total > len(skipped or {})]


def downgrade() -> None:
    lossy = summarised_runs()
    if lossy:
        named = ", ".join(f"run {run} capture {cap}: {total} skipped" for run, cap, total in lossy[:NAMED])
        more = f" and {len(lossy) - NAMED} more" if len(lossy) > NAMED else ""
        raise RuntimeError(
            f"cannot downgrade below 0009: {len(lossy)} run captures keep only the first {SHOWN} of their skipped "
            f"flows, and the schema before 0009 holds every one ({named}{more}); delete those captures "
            "first, or stay on 0009")
    with op.batch_alter_table('flows', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_flows_capture_id'), ['capture_id'], unique=False)
    with op.batch_alter_table('run_captures', schema=None) as batch_op:
        batch_op.drop_column('skipped_counts')
        batch_op.drop_column('skipped_total')
