"""The shortcut audit summed per puzzle on its review_state row (audit_shortcuts: how many shortcut
solvers solve it, NULL when not audited), so the gallery's audit flags are a column of the rows it
already scans (docs/store.md, "Audit per puzzle"). Filled here from the puzzle_audit rows that exist.

Revision ID: 0012
Revises: 0011
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    from db.puzzles.audit_results import summary_update
    with op.batch_alter_table('review_state', schema=None) as batch_op:
        batch_op.add_column(sa.Column('audit_shortcuts', sa.Integer(), nullable=True))
    op.get_bind().execute(summary_update())


def downgrade() -> None:
    with op.batch_alter_table('review_state', schema=None) as batch_op:
        batch_op.drop_column('audit_shortcuts')
