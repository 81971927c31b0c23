"""task heartbeats and re-dispatch notes; token expiry

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 17:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('worker', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('redispatches', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('note', sa.Text(), nullable=True))
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_column('note')
        batch_op.drop_column('redispatches')
        batch_op.drop_column('worker')
        batch_op.drop_column('heartbeat_at')
