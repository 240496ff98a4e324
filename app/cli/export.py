"""`mvp export` and `mvp sets freeze|list`: curated sets out of the database."""
from __future__ import annotations

import json

from app.cli.args import add_db_args


def register(sub) -> None:
    from mvp_core.export.formats import FORMATS
    p = sub.add_parser("export", help="write a curated set for a trainer: " + ", ".join(FORMATS))
    p.add_argument("--set", required=True, dest="set_name", help="curated set name")
    p.add_argument("--format", required=True, choices=list(FORMATS),
                   help="; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    p.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    p.add_argument("--license", default="other",
                   help="the dataset card's license field (a Hub license id, e.g. cc-by-4.0; default: other)")
    p.add_argument("--push-to-hub", metavar="REPO",
                   help="also upload the export folder, card included, to this Hub dataset repository "
                        "(owner/name; token from HF_TOKEN or `hf auth login`)")
    p.add_argument("--private", action="store_true", help="with --push-to-hub: create the repository private")
    add_db_args(p)
    p.set_defaults(func=_export)
    p = sub.add_parser("sets", help="curated sets: freeze the accepted puzzles, list sets")
    ssub = p.add_subparsers(dest="sets_command", required=True)
    q = ssub.add_parser("freeze", help="freeze the accepted puzzles under a new name")
    q.add_argument("name")
    q.add_argument("--min-distractors", type=int, default=2,
                   help="exclude puzzles left with fewer distractors after removing rejected ones (default 2)")
    q.add_argument("--split", default="train=0.8,val=0.1,test=0.1",
                   help="fractions of the VIDEOS per split (no video in two splits); default train=0.8,val=0.1,test=0.1")
    q.add_argument("--split-seed", type=int, default=0, help="seed of the video shuffle behind the split")
    add_db_args(q)
    q.set_defaults(func=_freeze)
    q = ssub.add_parser("list", help="list curated sets")
    add_db_args(q)
    q.set_defaults(func=_list)


def _export(args) -> int:
    from pathlib import Path

    from db.engine import data_dir, open_db
    from db.sets.export import export_set
    with open_db(args.db, args.data)() as s:
        out = export_set(s, args.set_name, args.format, Path(args.out), data_dir(args.data), license=args.license)
    if args.push_to_hub:
        out["hub"] = _push(Path(args.out), args.push_to_hub, args.private)
    print(json.dumps(out))
    return 0


def _push(folder, repo_id: str, private: bool) -> str:
    """Upload the finished export as it is (its card says how `datasets` reads it), so the Hub copy
    is the folder that was checked locally; the local export stays whole whatever the Hub answers."""
    from huggingface_hub import HfApi

    from mvp_core.errors import UserError
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                          commit_message="mvp export")
    except Exception as e:    # noqa: BLE001 -- the client raises its HTTP library's own errors (no stable public type)
        why = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise UserError(f"the export is complete in {folder}, but pushing it to the Hub repository "
                        f"{repo_id!r} failed: {why}") from None
    return f"{api.endpoint}/datasets/{repo_id}"


def _freeze(args) -> int:
    from db.engine import open_db
    from db.sets.curated import freeze_set, parse_split
    split = parse_split(args.split)
    with open_db(args.db, args.data)() as s:
        out = freeze_set(s, args.name, min_distractors=args.min_distractors, split=split, split_seed=args.split_seed)
    print(json.dumps(out, default=str))
    return 0


def _list(args) -> int:
    from db.engine import open_db
    from db.sets.curated import list_sets
    with open_db(args.db, args.data)() as s:
        for x in list_sets(s):
            print(f"{x['name']}\t{x['n_puzzles']} puzzles\t{x['n_excluded']} excluded\t{x['content_hash'][:16]}")
    return 0
