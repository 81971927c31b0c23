"""fair dispatch: when each task was released to the workers (none: waiting for its owner's turn)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 18:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('released_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_tasks_status_released', ['status', 'released_at'])
    # unfinished tasks of the previous version were all sent to the broker when they were made
    op.execute("update tasks set released_at = updated_at where status in ('queued', 'started')")


def downgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_index('ix_tasks_status_released')
        batch_op.drop_column('released_at')
