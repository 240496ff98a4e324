"""PostgreSQL: `mvp_next_puzzle(user, t, until)`, the whole queue claim of db.review.next_puzzle as one
server-side call (one round trip instead of ~8; the claim itself is an index range scan of ~0.1 ms, so
round trips were the cost).

Why a function and not one UPDATE/INSERT ... RETURNING: under READ COMMITTED a single statement reads
one snapshot. Curator A locks queue row P (FOR UPDATE SKIP LOCKED), inserts a lease and commits; B's
statement, whose snapshot predates A's commit, then locks P (no longer locked, and the row itself was
not updated, so no re-check happens) and still counts zero leases on it: P would be handed out twice.
A plpgsql function takes a fresh snapshot for each of its statements, so it can re-check the room
after taking the lock, exactly as the Python claim did, without leaving the server. SQLite needs none
of this (BEGIN IMMEDIATE serialises writers); there db.review runs the same steps as statements.

Revision ID: 0002
Revises: 0001
"""
from __future__ import annotations

from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

# Mirrors db.review (the SQLite path): 1. my live lease on a puzzle I have not judged -> extend it and
# return it; 2. drop my expired leases; 3. for n = k-1 .. 0 find a puzzle with n decisive reviews that
# I have not judged and whose live leases leave room, lock it (skipping rows others hold), re-check the
# room with a fresh snapshot, lease it. Returns NULL when nothing is left for this curator.
PG_NEXT_PUZZLE = """
CREATE OR REPLACE FUNCTION mvp_next_puzzle(p_user integer, p_t timestamptz, p_until timestamptz)
RETURNS varchar AS $$
DECLARE
  v_k integer;
  v_pid varchar;
  v_lid bigint;
  v_room integer;
BEGIN
  SELECT l.id, l.puzzle_id INTO v_lid, v_pid FROM leases l
   WHERE l.user_id = p_user AND l.expires_at > p_t
     AND NOT EXISTS (SELECT 1 FROM puzzle_verdicts v WHERE v.puzzle_id = l.puzzle_id AND v.user_id = p_user)
   ORDER BY l.started_at LIMIT 1;
  IF FOUND THEN
    UPDATE leases SET expires_at = p_until WHERE id = v_lid;
    RETURN v_pid;
  END IF;
  DELETE FROM leases WHERE user_id = p_user AND expires_at <= p_t;
  SELECT coalesce((SELECT (s.value #>> '{}')::integer FROM settings s WHERE s.key = 'review.overlap_k'), 1)
    INTO v_k;
  FOR n IN REVERSE v_k - 1 .. 0 LOOP
    FOR attempt IN 1 .. 20 LOOP
      -- "not judged by me" as a scalar subquery, not NOT EXISTS: the planner turns NOT EXISTS into a
      -- merge anti join that reads all of my verdicts (ms per call, growing with my work); this is
      -- one (puzzle_id, user_id) index probe per candidate row.
      SELECT rs.puzzle_id INTO v_pid FROM review_state rs
       WHERE rs.n_reviews = n
         AND (SELECT v.id FROM puzzle_verdicts v WHERE v.puzzle_id = rs.puzzle_id AND v.user_id = p_user)
             IS NULL
         AND (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id AND l.expires_at > p_t) < v_k - n
       ORDER BY rs.puzzle_id LIMIT 1
       FOR UPDATE SKIP LOCKED;
      EXIT WHEN NOT FOUND;
      -- a new statement: a fresh snapshot that sees leases committed while we waited for the lock
      SELECT rs.n_reviews + (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id
                                                           AND l.expires_at > p_t)
        INTO v_room FROM review_state rs WHERE rs.puzzle_id = v_pid;
      IF v_room < v_k THEN
        INSERT INTO leases (puzzle_id, user_id, started_at, expires_at) VALUES (v_pid, p_user, p_t, p_until);
        RETURN v_pid;
      END IF;
    END LOOP;
  END LOOP;
  RETURN NULL;
END
$$ LANGUAGE plpgsql VOLATILE
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_NEXT_PUZZLE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS mvp_next_puzzle(integer, timestamptz, timestamptz)")
