"""the bytes each replay task stored (derived data held to the owner's quota)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('series_bytes', sa.BigInteger(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('row_bytes', sa.BigInteger(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_column('row_bytes')
        batch_op.drop_column('series_bytes')
