"""per-flow diagnostics of a run (docs/estimators.md §7 explanations)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 11:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'flow_diagnostics',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('capture_id', sa.String(length=32), nullable=False),
        sa.Column('flow_id', sa.Integer(), nullable=False),
        sa.Column('data', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['capture_id'], ['captures.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'capture_id', 'flow_id', name='uq_flow_diagnostics'),
    )
    op.create_index('ix_flow_diagnostics_run_id', 'flow_diagnostics', ['run_id'])


def downgrade() -> None:
    op.drop_index('ix_flow_diagnostics_run_id', table_name='flow_diagnostics')
    op.drop_table('flow_diagnostics')
