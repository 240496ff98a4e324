"""An index for the gallery's "model right or wrong" filter and each card's model result
(db/review/gallery.py): rollouts (run_id, puzzle_id, exact), so a run's per-puzzle mean exact match is
read from the index in puzzle order, with no sort and no table rows (docs/store.md, "Gallery").

Revision ID: 0010
Revises: 0009
"""
from __future__ import annotations

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_rollouts_run_puzzle_exact', 'rollouts', ['run_id', 'puzzle_id', 'exact'])


def downgrade() -> None:
    op.drop_index('ix_rollouts_run_puzzle_exact', table_name='rollouts')
