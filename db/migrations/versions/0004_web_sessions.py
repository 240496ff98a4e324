"""Web sessions and login attempts in the database (db/models/auth.py): restarts keep users logged in,
two server processes share sessions and the login throttle.

Revision ID: 0004
Revises: 0003
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        'web_sessions',
        sa.Column('token_hash', sa.String(length=64), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('token_hash'),
    )
    op.create_index('ix_web_sessions_user_id', 'web_sessions', ['user_id'])
    op.create_index('ix_web_sessions_expires_at', 'web_sessions', ['expires_at'])
    op.create_table(
        'login_attempts',
        sa.Column('id', BigId, autoincrement=True, nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_login_attempts_key_at', 'login_attempts', ['key', 'at'])


def downgrade() -> None:
    op.drop_index('ix_login_attempts_key_at', table_name='login_attempts')
    op.drop_table('login_attempts')
    op.drop_index('ix_web_sessions_expires_at', table_name='web_sessions')
    op.drop_index('ix_web_sessions_user_id', table_name='web_sessions')
    op.drop_table('web_sessions')
