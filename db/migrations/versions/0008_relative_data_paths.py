"""Stored paths inside the data directory become relative to it (db/paths.py), so a copied data
directory works and a lookup by path (`Run.dir == d`, which binds `d` relative) finds older rows.

Only absolute paths under the data directory the migrating engine was opened with are rewritten;
any other value stays as it is and is still read as given. An engine opened without a data
directory (no `bind_data_dir`) changes nothing. The schema does not change.

Revision ID: 0008
Revises: 0007
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

# (table, primary key, path columns): the columns typed DataPath in db/models
COLUMNS = (('runs', 'id', ('dir', 'model_path')), ('checkpoints', 'id', ('path',)),
           ('videos', 'id', ('path',)), ('synth_files', 'id', ('path',)))


def upgrade() -> None:
    from db.paths import engine_data_dir, to_stored
    bind = op.get_bind()
    data = engine_data_dir(bind.dialect)
    if not data:
        return
    for table, key, cols in COLUMNS:
        for col in cols:
            rows = bind.execute(sa.text(f"SELECT {key}, {col} FROM {table} WHERE {col} LIKE :p"),
                                {"p": data.rstrip("/") + "/%"}).all()
            changed = [{"k": k, "v": to_stored(v, data)} for k, v in rows if to_stored(v, data) != v]
            if changed:
                bind.execute(sa.text(f"UPDATE {table} SET {col} = :v WHERE {key} = :k"), changed)


def downgrade() -> None:
    pass      # not reversible: which relative values were paths (and not model names) is not recorded
