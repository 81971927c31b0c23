"""a capture's skipped flows kept as a summary: the first 100, how many, how many per kind of reason; flows
without their redundant capture_id index

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 18:30:00

Existing runs keep every skipped flow in ``run_captures.skipped`` with ``skipped_total`` null, and are read
as they are (``core.skipped_flows``). ``flows`` keeps ``uq_flow_capture_flow`` (capture_id, flow_id), which
finds a capture's flows: its own index of capture_id only slowed the writing of a million flows.
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


def downgrade() -> None:
    with op.batch_alter_table('flows', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_flows_capture_id'), ['capture_id'], unique=False)
    with op.batch_alter_table('run_captures', schema=None) as batch_op:
        batch_op.drop_column('skipped_counts')
        batch_op.drop_column('skipped_total')
