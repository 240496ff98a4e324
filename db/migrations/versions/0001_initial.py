"""Initial schema: every table (synthesis, curation, sets, runs, rollouts) and the queue trigger.

Revision ID: 0001
Revises: 
Create Date: 2026-11-30 10:44:57.791304
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Every new puzzle gets its review_state row (the curation queue) in the same transaction, whoever
# inserts it (synthesis, import, a script); db.review.sync_queue repairs databases made without it.
SQLITE_TRIGGER = """
CREATE TRIGGER trg_puzzles_review_state AFTER INSERT ON puzzles
BEGIN
  INSERT OR IGNORE INTO review_state (puzzle_id, n_reviews, n_accept, status)
  VALUES (NEW.id, 0, 0, 'pending');
END
"""
PG_FUNCTION = """
CREATE FUNCTION mvp_puzzle_review_state() RETURNS trigger AS $$
BEGIN
  INSERT INTO review_state (puzzle_id, n_reviews, n_accept, status)
  VALUES (NEW.id, 0, 0, 'pending') ON CONFLICT DO NOTHING;
  RETURN NEW;
END
$$ LANGUAGE plpgsql
"""
PG_TRIGGER = ("CREATE TRIGGER trg_puzzles_review_state AFTER INSERT ON puzzles "
              "FOR EACH ROW EXECUTE FUNCTION mvp_puzzle_review_state()")


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('runs',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('model_path', sa.Text(), nullable=False),
    sa.Column('set_name', sa.String(length=128), nullable=True),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('dir', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_runs_kind'), ['kind'], unique=False)
        batch_op.create_index(batch_op.f('ix_runs_set_name'), ['set_name'], unique=False)

    op.create_table('settings',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('synth_files',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('mtime_ns', sa.BigInteger(), nullable=False),
    sa.Column('params_key', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('video_id', sa.String(length=32), nullable=True),
    sa.Column('n_puzzles', sa.Integer(), nullable=False),
    sa.Column('sample_fps', sa.Float(), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('path', 'size', 'mtime_ns', 'params_key')
    )
    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("role IN ('curator','researcher','admin')", name='ck_users_role'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('videos',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('fps', sa.Float(), nullable=False),
    sa.Column('duration_s', sa.Float(), nullable=False),
    sa.Column('width', sa.Integer(), nullable=False),
    sa.Column('height', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('sha256')
    )
    op.create_table('checkpoints',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('step', sa.Integer(), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'step')
    )
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_checkpoints_run_id'), ['run_id'], unique=False)

    op.create_table('curated_sets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('n_puzzles', sa.Integer(), nullable=False),
    sa.Column('n_excluded', sa.Integer(), nullable=False),
    sa.Column('min_distractors', sa.Integer(), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('puzzles',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('video_id', sa.String(length=32), nullable=False),
    sa.Column('params_key', sa.String(length=32), nullable=False),
    sa.Column('mask_start', sa.Integer(), nullable=False),
    sa.Column('mask_length', sa.Integer(), nullable=False),
    sa.Column('n_options', sa.Integer(), nullable=False),
    sa.Column('record_json', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['video_id'], ['videos.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('puzzles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_puzzles_params_key'), ['params_key'], unique=False)
        batch_op.create_index(batch_op.f('ix_puzzles_video_id'), ['video_id'], unique=False)

    op.create_table('leases',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'user_id')
    )
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_leases_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_leases_user_id'), ['user_id'], unique=False)

    op.create_table('options',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('label', sa.String(length=4), nullable=False),
    sa.Column('uri', sa.Text(), nullable=False),
    sa.Column('t', sa.Float(), nullable=False),
    sa.Column('source_video_id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('difficulty', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'label')
    )
    with op.batch_alter_table('options', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_options_puzzle_id'), ['puzzle_id'], unique=False)

    op.create_table('puzzle_verdicts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('verdict', sa.String(length=8), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("verdict IN ('accept','reject','skip')", name='ck_pv_verdict'),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'user_id')
    )
    with op.batch_alter_table('puzzle_verdicts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_puzzle_verdicts_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_puzzle_verdicts_user_id'), ['user_id'], unique=False)

    op.create_table('review_state',
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('n_reviews', sa.Integer(), nullable=False),
    sa.Column('n_accept', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('puzzle_id')
    )
    with op.batch_alter_table('review_state', schema=None) as batch_op:
        batch_op.create_index('ix_review_state_queue', ['n_reviews', 'puzzle_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_state_status'), ['status'], unique=False)

    op.create_table('rollouts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('checkpoint_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('sample_index', sa.Integer(), nullable=False),
    sa.Column('completion', sa.Text(), nullable=False),
    sa.Column('chosen_labels', sa.JSON(), nullable=False),
    sa.Column('format', sa.Float(), nullable=False),
    sa.Column('selection', sa.Float(), nullable=False),
    sa.Column('order', sa.Float(), nullable=False),
    sa.Column('exact', sa.Float(), nullable=False),
    sa.Column('total', sa.Float(), nullable=False),
    sa.Column('advantage', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['checkpoint_id'], ['checkpoints.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'checkpoint_id', 'puzzle_id', 'sample_index')
    )
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rollouts_checkpoint_id'), ['checkpoint_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_rollouts_puzzle_id'), ['puzzle_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_rollouts_run_id'), ['run_id'], unique=False)

    op.create_table('set_items',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('set_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('record_json', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ),
    sa.ForeignKeyConstraint(['set_id'], ['curated_sets.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('set_id', 'position'),
    sa.UniqueConstraint('set_id', 'puzzle_id')
    )
    with op.batch_alter_table('set_items', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_set_items_puzzle_id'), ['puzzle_id'], unique=False)

    op.create_table('verdict_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('label', sa.String(length=4), nullable=True),
    sa.Column('action', sa.String(length=8), nullable=False),
    sa.Column('undoes', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('before', sa.JSON(), nullable=True),
    sa.Column('after', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('undoes')
    )
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_verdict_events_puzzle_id'), ['puzzle_id'], unique=False)
        batch_op.create_index('ix_verdict_events_user_id_id', ['user_id', 'id'], unique=False)

    op.create_table('option_verdicts',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('puzzle_id', sa.String(length=32), nullable=False),
    sa.Column('option_id', sa.Integer(), nullable=False),
    sa.Column('label', sa.String(length=4), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('verdict', sa.String(length=8), nullable=False),
    sa.Column('reason_code', sa.String(length=16), nullable=True),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("verdict IN ('keep','reject')", name='ck_ov_verdict'),
    sa.ForeignKeyConstraint(['option_id'], ['options.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['puzzle_id'], ['puzzles.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('puzzle_id', 'label', 'user_id')
    )
    with op.batch_alter_table('option_verdicts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_option_verdicts_option_id'), ['option_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_option_verdicts_user_id'), ['user_id'], unique=False)

    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute(PG_TRIGGER)
    else:
        op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS trg_puzzles_review_state ON puzzles")
        op.execute("DROP FUNCTION IF EXISTS mvp_puzzle_review_state()")
    else:
        op.execute("DROP TRIGGER IF EXISTS trg_puzzles_review_state")
    with op.batch_alter_table('option_verdicts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_option_verdicts_user_id'))
        batch_op.drop_index(batch_op.f('ix_option_verdicts_option_id'))

    op.drop_table('option_verdicts')
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.drop_index('ix_verdict_events_user_id_id')
        batch_op.drop_index(batch_op.f('ix_verdict_events_puzzle_id'))

    op.drop_table('verdict_events')
    with op.batch_alter_table('set_items', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_set_items_puzzle_id'))

    op.drop_table('set_items')
    with op.batch_alter_table('rollouts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rollouts_run_id'))
        batch_op.drop_index(batch_op.f('ix_rollouts_puzzle_id'))
        batch_op.drop_index(batch_op.f('ix_rollouts_checkpoint_id'))

    op.drop_table('rollouts')
    with op.batch_alter_table('review_state', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_review_state_status'))
        batch_op.drop_index('ix_review_state_queue')

    op.drop_table('review_state')
    with op.batch_alter_table('puzzle_verdicts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_puzzle_verdicts_user_id'))
        batch_op.drop_index(batch_op.f('ix_puzzle_verdicts_created_at'))

    op.drop_table('puzzle_verdicts')
    with op.batch_alter_table('options', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_options_puzzle_id'))

    op.drop_table('options')
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_leases_user_id'))
        batch_op.drop_index(batch_op.f('ix_leases_expires_at'))

    op.drop_table('leases')
    with op.batch_alter_table('puzzles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_puzzles_video_id'))
        batch_op.drop_index(batch_op.f('ix_puzzles_params_key'))

    op.drop_table('puzzles')
    op.drop_table('curated_sets')
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_checkpoints_run_id'))

    op.drop_table('checkpoints')
    op.drop_table('videos')
    op.drop_table('users')
    op.drop_table('synth_files')
    op.drop_table('settings')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_runs_set_name'))
        batch_op.drop_index(batch_op.f('ix_runs_kind'))

    op.drop_table('runs')
