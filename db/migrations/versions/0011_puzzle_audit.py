"""The shortcut audit per puzzle (db/models/audit.py): one row per puzzle and solver of the latest
audit that covered the puzzle (docs/store.md, "Audit per puzzle").

Revision ID: 0011
Revises: 0010
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('puzzle_audit',
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('solver', sa.String(length=32), nullable=False),
    sa.Column('exact', sa.Float(), nullable=False),
    sa.Column('reward', sa.Float(), nullable=False),
    sa.Column('audited_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('puzzle_id', 'solver')
    )
    op.create_index('ix_puzzle_audit_solver_exact', 'puzzle_audit', ['solver', 'exact', 'puzzle_id'])


def downgrade() -> None:
    op.drop_index('ix_puzzle_audit_solver_exact', table_name='puzzle_audit')
    op.drop_table('puzzle_audit')
