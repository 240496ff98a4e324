"""The gallery's tables (db/models/gallery.py): bulk batches, tags and comments on a puzzle or a
distractor, saved views; indexes for the gallery's filters and orders; and verdict_events.batch_id, the bulk action a verdict change belongs to,
so undo removes a batch as one (docs/store.md, "Gallery").

Revision ID: 0009
Revises: 0008
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('bulk_batches',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('n_puzzles', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('undone_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('bulk_batches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_bulk_batches_user_id'), ['user_id'], unique=False)

    op.create_table('saved_views',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=80), nullable=False),
    sa.Column('query', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('user_id', 'name')
    )
    op.create_table('puzzle_comments',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('label', sa.String(length=4), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('puzzle_comments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_puzzle_comments_puzzle_id'), ['puzzle_id'], unique=False)

    op.create_table('puzzle_tags',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('label', sa.String(length=4), nullable=False),
    sa.Column('tag', sa.String(length=40), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('batch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['batch_id'], ['bulk_batches.id'], ),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'label', 'tag')
    )
    with op.batch_alter_table('puzzle_tags', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_puzzle_tags_batch_id'), ['batch_id'], unique=False)
        batch_op.create_index('ix_puzzle_tags_tag', ['tag', 'puzzle_id'], unique=False)

    # the gallery's filters and orders as index range scans (db/review/gallery.py)
    op.create_index('ix_puzzles_video_id_id', 'puzzles', ['video_id', 'id'])
    op.create_index('ix_options_kind_puzzle_id', 'options', ['kind', 'puzzle_id'])
    op.create_index('ix_review_state_status_id', 'review_state', ['status', 'puzzle_id'])
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.add_column(sa.Column('batch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True))
        batch_op.create_index(batch_op.f('ix_verdict_events_batch_id'), ['batch_id'], unique=False)



def downgrade() -> None:
    for name, table in (('ix_puzzles_video_id_id', 'puzzles'), ('ix_options_kind_puzzle_id', 'options'),
                        ('ix_review_state_status_id', 'review_state')):
        op.drop_index(name, table_name=table)
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_verdict_events_batch_id'))
        batch_op.drop_column('batch_id')

    with op.batch_alter_table('puzzle_tags', schema=None) as batch_op:
        batch_op.drop_index('ix_puzzle_tags_tag')
        batch_op.drop_index(batch_op.f('ix_puzzle_tags_batch_id'))

    op.drop_table('puzzle_tags')
    with op.batch_alter_table('puzzle_comments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_puzzle_comments_puzzle_id'))

    op.drop_table('puzzle_comments')
    op.drop_table('saved_views')
    with op.batch_alter_table('bulk_batches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_bulk_batches_user_id'))

    op.drop_table('bulk_batches')
