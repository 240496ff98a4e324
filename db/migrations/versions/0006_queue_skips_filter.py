"""The queue: skipped puzzles come back after everything else, and the queue takes a filter.

PostgreSQL: `mvp_next_puzzle(user, t, until, video, status, kind, dmin, dmax)` replaces the three-
argument function of 0002 (same reasons for a function: a fresh snapshot per statement, so the
room can be re-checked after taking the row lock). It runs db/review/queue_rule.py's steps: 1. my
live lease on a puzzle I have not decided (no verdict, or a skip) -> extend and return it; 2. drop
my expired leases; 3. for n = k-1 .. 0 the first puzzle with n decisive reviews I have no verdict
on, with room; 4. else the puzzle I skipped longest ago, with room. Every step honours the filter
(NULL parts: no condition). Both engines: an index on (user, verdict, time, puzzle) for step 4.

Revision ID: 0006
Revises: 0005
"""
from __future__ import annotations

from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def _filter(col: str) -> str:
    """The queue filter on the puzzle in `col` (parameters NULL: no condition). The function is
    planned per call (plan_cache_mode below), so the NULL parts fold away and a set video drives
    the scan from the puzzles' video index."""
    hardest = f"(SELECT max(fd.difficulty) FROM options fd WHERE fd.puzzle_id = {col} AND fd.kind <> 'target')"
    return f"""
     AND (p_video IS NULL OR {col} IN (SELECT fp.id FROM puzzles fp WHERE fp.video_id = p_video))
     AND (p_status IS NULL
          OR (p_status = 'skipped' AND (SELECT fv.verdict FROM puzzle_verdicts fv
                                         WHERE fv.puzzle_id = {col} AND fv.user_id = p_user) = 'skip')
          OR (p_status <> 'skipped' AND (SELECT frs.status FROM review_state frs
                                          WHERE frs.puzzle_id = {col}) = p_status))
     AND (p_kind IS NULL OR EXISTS (SELECT 1 FROM options fo WHERE fo.puzzle_id = {col} AND fo.kind = p_kind))
     AND (p_dmin IS NULL OR {hardest} >= p_dmin)
     AND (p_dmax IS NULL OR {hardest} <= p_dmax)"""


# "not judged by me" as a scalar subquery, not NOT EXISTS: the planner turns NOT EXISTS into a merge
# anti join that reads all of my verdicts (ms per call, growing with my work); this is one
# (puzzle_id, user_id) index probe per candidate row.
PG_NEXT_PUZZLE = f"""
CREATE FUNCTION mvp_next_puzzle(p_user integer, p_t timestamptz, p_until timestamptz,
                                p_video varchar, p_status varchar, p_kind varchar,
                                p_dmin double precision, p_dmax double precision)
RETURNS varchar AS $$
DECLARE
  v_k integer;
  v_pid varchar;
  v_lid bigint;
  v_room integer;
BEGIN
  SELECT l.id, l.puzzle_id INTO v_lid, v_pid FROM leases l
   WHERE l.user_id = p_user AND l.expires_at > p_t
     AND coalesce((SELECT v.verdict FROM puzzle_verdicts v
                    WHERE v.puzzle_id = l.puzzle_id AND v.user_id = p_user), 'skip') = 'skip'{_filter('l.puzzle_id')}
   ORDER BY l.started_at LIMIT 1;
  IF FOUND THEN
    UPDATE leases SET expires_at = p_until WHERE id = v_lid;
    RETURN v_pid;
  END IF;
  DELETE FROM leases WHERE user_id = p_user AND expires_at <= p_t;
  SELECT coalesce((SELECT (s.value #>> '{{}}')::integer FROM settings s WHERE s.key = 'review.overlap_k'), 1)
    INTO v_k;
  -- step 3 wants no verdict of mine (never a skipped puzzle); only pending puzzles have room
  FOR n IN REVERSE v_k - 1 .. 0 LOOP
    EXIT WHEN p_status IS NOT NULL AND p_status <> 'pending';
    FOR attempt IN 1 .. 20 LOOP
      SELECT rs.puzzle_id INTO v_pid FROM review_state rs
       WHERE rs.n_reviews = n
         AND (SELECT v.id FROM puzzle_verdicts v WHERE v.puzzle_id = rs.puzzle_id AND v.user_id = p_user)
             IS NULL
         AND (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id AND l.expires_at > p_t) < v_k - n
         {_filter('rs.puzzle_id')}
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
  FOR attempt IN 1 .. 20 LOOP
    EXIT WHEN p_status IS NOT NULL AND p_status NOT IN ('pending', 'skipped');
    SELECT rs.puzzle_id INTO v_pid FROM puzzle_verdicts sv JOIN review_state rs ON rs.puzzle_id = sv.puzzle_id
     WHERE sv.user_id = p_user AND sv.verdict = 'skip'
       AND rs.n_reviews + (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id
                                                          AND l.expires_at > p_t) < v_k
       {_filter('rs.puzzle_id')}
     ORDER BY sv.created_at, sv.puzzle_id LIMIT 1
     FOR UPDATE OF rs SKIP LOCKED;
    EXIT WHEN NOT FOUND;
    SELECT rs.n_reviews + (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id
                                                         AND l.expires_at > p_t)
      INTO v_room FROM review_state rs WHERE rs.puzzle_id = v_pid;
    IF v_room < v_k THEN
      INSERT INTO leases (puzzle_id, user_id, started_at, expires_at) VALUES (v_pid, p_user, p_t, p_until);
      RETURN v_pid;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$ LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan
"""

_OLD = "mvp_next_puzzle(integer, timestamptz, timestamptz)"
_NEW = ("mvp_next_puzzle(integer, timestamptz, timestamptz, varchar, varchar, varchar, "
        "double precision, double precision)")


def upgrade() -> None:
    with op.batch_alter_table('puzzle_verdicts', schema=None) as batch_op:
        batch_op.create_index('ix_puzzle_verdicts_skips', ['user_id', 'verdict', 'created_at', 'puzzle_id'],
                              unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION IF EXISTS {_OLD}")
        op.execute(PG_NEXT_PUZZLE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION IF EXISTS {_NEW}")
        op.execute(_revision_0002().PG_NEXT_PUZZLE)
    with op.batch_alter_table('puzzle_verdicts', schema=None) as batch_op:
        batch_op.drop_index('ix_puzzle_verdicts_skips')



def _revision_0002():
    """Migration 0002's module (its function text is what a downgrade restores)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("mvp_migration_0002",
                                                  Path(__file__).with_name("0002_next_puzzle_fn.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
