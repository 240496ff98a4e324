"""SQLAlchemy 2 models: the whole store. Importing this package registers every table on `Base`
(so Alembic and `create_all` see them all); each module beside it holds one area and imports only
`db.models.base`, so there is no cycle."""
from db.models.base import Base, BigId, utcnow
from db.models.curation import (User, Setting, PuzzleVerdict, OptionVerdict, VerdictEvent, Lease, ReviewState, CuratedSet, SetItem)
from db.models.human import HumanAnswer
from db.models.gallery import BulkBatch, PuzzleComment, PuzzleTag, SavedView
from db.models.media import Option, Puzzle, SynthFile, Video
from db.models.runs import Run, Checkpoint, Rollout, Evaluation
from db.models.auth import LoginAttempt, WebSession
from db.models.audit import PuzzleAudit

__all__ = ["Base", "BigId", "utcnow", "Option", "Puzzle", "SynthFile", "Video",
           "User", "Setting", "PuzzleVerdict", "OptionVerdict", "VerdictEvent", "Lease", "ReviewState", "CuratedSet", "SetItem", "Run", "Checkpoint", "Rollout", "Evaluation",
           "LoginAttempt", "WebSession", "HumanAnswer",
           "BulkBatch", "PuzzleTag", "PuzzleComment", "SavedView", "PuzzleAudit"]
