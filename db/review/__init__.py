"""The review workflow the UI and CLI call: the queue (`queue`), verdicts and undo (`verdicts`),
statistics (`stats`) and inter-rater agreement (`kappa`); the queue's rule is
specified once in `queue_rule`."""
from db.review.queue import (aware, derive_status, get_setting, overlap_k, set_overlap, sync_queue, next_puzzle, peek_next, read_state, release, DEFAULT_LEASE_S, OVERLAP_KEY)  # noqa: F401
from db.review.verdicts import (submit_verdict, set_option_verdict, undo_last, requeue, history, REQUEUE_ROLES)  # noqa: F401
from db.review.stats import (puzzle_status, progress, puzzle_agreement, agreement, DECISIVE, is_verdict)  # noqa: F401
from db.review.access import may_judge, check_may_judge  # noqa: F401
