"""Runs as first-class records: the set/split each stored answer was asked on, and the evaluations
table (one eval report per run checkpoint and set split). See docs/web.md, "Rollouts".

Revision ID: 0003
Revises: 0002
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('set_name', sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column('split', sa.String(length=16), nullable=True))
    op.create_table('evaluations',
                    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                              nullable=False),
                    sa.Column('run_id', sa.String(length=64), nullable=False),
                    sa.Column('checkpoint_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
                    sa.Column('set_name', sa.String(length=128), nullable=False),
                    sa.Column('split', sa.String(length=16), nullable=False),
                    sa.Column('n_puzzles', sa.Integer(), nullable=False),
                    sa.Column('exact', sa.Float(), nullable=False),
                    sa.Column('total', sa.Float(), nullable=False),
                    sa.Column('report', sa.JSON(), nullable=False),
                    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
                    sa.ForeignKeyConstraint(['checkpoint_id'], ['checkpoints.id'], ondelete='CASCADE'),
                    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
                    sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('evaluations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_evaluations_run_id'), ['run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_evaluations_checkpoint_id'), ['checkpoint_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('evaluations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_evaluations_checkpoint_id'))
        batch_op.drop_index(batch_op.f('ix_evaluations_run_id'))
    op.drop_table('evaluations')
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.drop_column('split')
        batch_op.drop_column('set_name')
