"""human_answers: each curator's blind answer to a puzzle (solve first, then vet), scored.

Revision ID: 0005
Revises: 0004
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('human_answers',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('selection', sa.Float(), nullable=False),
    sa.Column('order', sa.Float(), nullable=False),
    sa.Column('exact', sa.Float(), nullable=False),
    sa.Column('total', sa.Float(), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'user_id')
    )
    with op.batch_alter_table('human_answers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_human_answers_puzzle_id'), ['puzzle_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_human_answers_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_table('human_answers')
