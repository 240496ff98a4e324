"""The gallery's query layer, tags, comments, saved views and bulk actions on both engines
(db/review/gallery.py, tags.py, bulk.py): bulk verdicts are ordinary verdicts the review rule and
agreement count, undone as one batch; refusals are one line and leave nothing written."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from db import review
from db.models.curation import PuzzleVerdict, ReviewState, VerdictEvent
from db.models.gallery import BulkBatch, PuzzleTag
from db.models.runs import Rollout, Run
from db.review import gallery, tags
from db.review.bulk import bulk_action, undo_batch
from db.users.accounts import add_user
from mvp_core.errors import UserError


def _user(s, name, role):
    uid = add_user(s, name, role, "password-" + name)[0].id
    s.commit()
    return uid


def _ids(store_db):
    return sorted(r["id"] for r in store_db.records)


def _page(s, **q):
    return gallery.gallery_page(s, gallery.parse_query(q))


def _state_counts(s):
    return (s.scalar(select(func.count()).select_from(PuzzleVerdict)),
            s.scalar(select(func.count()).select_from(VerdictEvent)),
            s.scalar(select(func.count()).select_from(PuzzleTag)),
            s.scalar(select(func.count()).select_from(BulkBatch)))


def test_gallery_filters_sort_search_and_pages(store_db):
    ids = _ids(store_db)
    assert len(ids) >= 4
    with store_db.Session() as s:
        ada = _user(s, "ada", "admin")
        cora = _user(s, "cora", "curator")
        first = _page(s, limit=2)
        assert [r["puzzle_id"] for r in first["rows"]] == ids[:2] and first["total"] == len(ids)
        assert first["by_status"]["pending"] == len(ids)
        card = first["rows"][0]
        assert card["before"] and card["after"] and card["gap"] >= 1 and card["agreement"] is None
        assert [r["puzzle_id"] for r in _page(s, limit=2, offset=2)["rows"]] == ids[2:4]
        assert [r["puzzle_id"] for r in _page(s, desc=True, limit=len(ids))["rows"]] == ids[::-1]

        # status, curator and agreement come from the stored verdicts
        review.set_overlap(s, 2)
        s.commit()
        bulk_action(s, ada, ids[:2], "accept")
        got = _page(s, curator="ada")
        assert {r["puzzle_id"] for r in got["rows"]} == set(ids[:2]) and got["total"] == 2
        assert _page(s, status=["pending"])["total"] == len(ids)       # k = 2: one review is not enough
        tags.add_tag(s, cora, ids[3], "Blurry ")
        tags.add_comment(s, cora, ids[2], "the Horse jumps twice")
        assert [r["puzzle_id"] for r in _page(s, tag=["blurry"])["rows"]] == [ids[3]]
        assert [r["puzzle_id"] for r in _page(s, q="blurry")["rows"]] == [ids[3]]
        assert [r["puzzle_id"] for r in _page(s, q="horse jumps")["rows"]] == [ids[2]]
        assert [r["puzzle_id"] for r in _page(s, q=ids[1][:12])["rows"]] == [ids[1]]
        row3 = next(r for r in _page(s, limit=len(ids))["rows"] if r["puzzle_id"] == ids[3])
        assert row3["tags"] == [{"tag": "blurry", "label": ""}]
        row2 = next(r for r in _page(s, limit=len(ids))["rows"] if r["puzzle_id"] == ids[2])
        assert row2["n_comments"] == 1

        # video (search by file name too), distractor kind, sort by video
        rec = store_db.records[0]
        vname = rec["video"]["path"].rsplit("/", 1)[-1]
        of_video = {r["id"] for r in store_db.records if r["video"]["id"] == rec["video"]["id"]}
        assert {r["puzzle_id"] for r in _page(s, video=[rec["video"]["id"]], limit=200)["rows"]} == of_video
        assert of_video <= {r["puzzle_id"] for r in _page(s, q=vname.upper(), limit=200)["rows"]}
        kind = next(o["kind"] for o in rec["options"] if o["kind"] != "target")
        with_kind = {r["id"] for r in store_db.records if any(o["kind"] == kind for o in r["options"])}
        assert {r["puzzle_id"] for r in _page(s, kind=[kind], limit=200)["rows"]} == with_kind
        by_video = [r["video_id"] for r in _page(s, sort="video", limit=200)["rows"]]
        assert by_video == sorted(by_video)

        # a run's model right / wrong on each puzzle (mean exact over its stored answers)
        s.add(Run(id="r1", name="r1", kind="rollout", model_path="m", config={}, status="done"))
        s.flush()
        for i, pid in enumerate(ids[:3]):
            for j, ex in enumerate((1.0, 1.0) if i == 0 else (0.0, 1.0) if i == 1 else (0.0, 0.0)):
                s.add(Rollout(run_id="r1", puzzle_id=pid, sample_index=j, completion="", chosen_labels=[],
                              format=1.0, selection=ex, order=ex, exact=ex, total=ex))
        s.commit()
        assert [r["puzzle_id"] for r in _page(s, run="r1", model="right")["rows"]] == ids[:2]
        wrong = _page(s, run="r1", model="wrong")["rows"]
        assert [r["puzzle_id"] for r in wrong] == [ids[2]] and wrong[0]["model_exact"] == 0.0

        assert gallery.matching_ids(s, gallery.parse_query({"tag": ["blurry"], "offset": 5, "limit": 1})) == [ids[3]]
        for bad, line in (({"sort": "color"}, "sort must be one of"), ({"limit": 0}, "limit must be >= 1"),
                          ({"status": ["maybe"]}, "status"), ({"colour": 1}, "unknown config key")):
            with pytest.raises(UserError, match=line):
                gallery.parse_query(bad)


def test_saved_views_per_user(store_db):
    with store_db.Session() as s:
        a, b = _user(s, "ada", "admin"), _user(s, "cora", "curator")
        gallery.save_view(s, a, "blurry pending", gallery.parse_query({"tag": ["blurry"], "status": ["pending"],
                                                                       "sort": "video", "offset": 48}))
        q = gallery.get_view(s, a, "blurry pending")
        assert (q.tag, q.status, q.sort, q.offset) == (["blurry"], ["pending"], "video", 0)
        gallery.save_view(s, a, "blurry pending", gallery.parse_query({"q": "x"}))     # replaced
        assert gallery.list_views(s, a)[0]["query"]["q"] == "x" and len(gallery.list_views(s, a)) == 1
        assert gallery.list_views(s, b) == []
        with pytest.raises(UserError, match="no saved view"):
            gallery.get_view(s, b, "blurry pending")
        gallery.delete_view(s, a, "blurry pending")
        assert gallery.list_views(s, a) == []


def test_bulk_verdicts_count_as_verdicts_and_undo_as_one(store_db):
    ids = _ids(store_db)
    with store_db.Session() as s:
        ada, cora, bob = _user(s, "ada", "admin"), _user(s, "cora", "curator"), _user(s, "bob", "curator")
        review.set_overlap(s, 2)
        s.commit()
        # cora judged ids[0] by hand before; ada had rejected ids[1] by hand
        assert review.next_puzzle(s, cora) == ids[0]
        review.submit_verdict(s, cora, ids[0], "reject", reason="blur")
        res = bulk_action(s, ada, ids[:3], "accept", reason="looks fine")
        assert res["n_changed"] == 3
        assert {r[0]: r[1] for r in s.execute(select(ReviewState.puzzle_id, ReviewState.status))}[ids[0]] == "disputed"
        st = review.puzzle_status(s, ids[1])
        assert st["n_reviews"] == 1 and st["verdicts"] == [{"name": "ada", "verdict": "accept",
                                                           "reason": "looks fine", "seconds": 0.0}]
        assert review.agreement(s)["puzzle"]["pairs"][0]["n_items"] == 1      # ada and cora on ids[0]
        evs = s.scalars(select(VerdictEvent).where(VerdictEvent.batch_id == res["batch_id"])).all()
        assert len(evs) == 3 and {e.user_id for e in evs} == {ada}
        # a bulk batch is not undone piecewise by the curate page's undo ...
        assert review.undo_last(s, ada) is None
        # ... but as one, keeping a change made by hand since
        review.submit_verdict(s, ada, ids[2], "reject", reason="on second look")
        out = undo_batch(s, ada, res["batch_id"])
        assert (out["n_restored"], out["n_kept"]) == (2, 1)
        assert review.puzzle_status(s, ids[1])["n_reviews"] == 0
        assert [(v["name"], v["verdict"], v["reason"]) for v in review.puzzle_status(s, ids[0])["verdicts"]] \
            == [("cora", "reject", "blur")]
        assert review.puzzle_status(s, ids[2])["verdicts"][0]["verdict"] == "reject"
        assert s.scalar(select(func.count()).select_from(VerdictEvent).where(
            VerdictEvent.action == "undo", VerdictEvent.batch_id == res["batch_id"])) == 2
        with pytest.raises(UserError, match="already undone"):
            undo_batch(s, ada, res["batch_id"])
        with pytest.raises(UserError, match="no bulk action"):
            undo_batch(s, bob, res["batch_id"])


def test_bulk_refusals_are_one_line_and_write_nothing(store_db):
    ids = _ids(store_db)
    with store_db.Session() as s:
        rhea, cora = _user(s, "rhea", "researcher"), _user(s, "cora", "curator")
        before = _state_counts(s)
        for uid, args, line in (
                (rhea, (ids, "accept"), "only curators and admins may accept or reject"),
                (cora, (ids, "accept"), "is not assigned to you"),
                (cora, (ids, "requeue"), "only researchers and admins may send"),
                (rhea, (ids, "tag", "", "blurry"), "only curators and admins may tag"),
                (cora, (ids, "reject"), "needs a reason"),
                (cora, (ids + ["nope"], "tag", "", "x"), "no puzzle 'nope'"),
                (cora, (ids, "tag", "", "!!"), "a tag is 1 to 40"),
                (cora, ([], "tag", "", "x"), "no puzzles selected"),
                (cora, (ids, "delete"), "a bulk action is one of")):
            with pytest.raises(UserError, match=line) as e:
                bulk_action(s, uid, *args)
            assert "\n" not in str(e.value)
        assert _state_counts(s) == before
        # a curator's own puzzles (leased or judged) may be judged in bulk
        p = review.next_puzzle(s, cora)
        assert bulk_action(s, cora, [p], "reject", reason="dup")["n_changed"] == 1


def test_bulk_requeue_and_tag_undo(store_db):
    ids = _ids(store_db)
    rec = next(r for r in store_db.records if r["id"] == ids[0])
    label = next(o["label"] for o in rec["options"] if o["kind"] != "target")
    with store_db.Session() as s:
        ada, cora = _user(s, "ada", "admin"), _user(s, "cora", "curator")
        assert review.next_puzzle(s, cora) == ids[0]
        review.set_option_verdict(s, cora, ids[0], label, "reject", reason_code="ambiguous")
        review.submit_verdict(s, cora, ids[0], "accept")
        bulk_action(s, ada, ids[1:3], "accept")
        res = bulk_action(s, ada, ids[:4], "requeue", reason="new rubric")
        assert res["n_changed"] == 3
        assert s.scalar(select(func.count()).select_from(PuzzleVerdict)) == 0
        assert {review.puzzle_status(s, p)["status"] for p in ids[:4]} == {"pending"}
        heads = s.scalars(select(VerdictEvent).where(VerdictEvent.action == "requeue")).all()
        assert len(heads) == 3 and all(h.batch_id == res["batch_id"] for h in heads)
        out = undo_batch(s, ada, res["batch_id"])
        assert out["n_restored"] == 4           # cora's verdict and option verdict, ada's two accepts
        assert review.puzzle_status(s, ids[0])["rejected_options"] == {label: 1}
        assert review.puzzle_status(s, ids[0])["status"] == "accepted"

        t = bulk_action(s, cora, ids, "tag", tag="Night")
        assert t["n_changed"] == len(ids)
        tags.add_tag(s, cora, ids[0], "night", label=label)       # on a distractor: not part of the batch
        assert tags.puzzle_tags(s, ids[:1]) == {ids[0]: ["night"]}
        assert bulk_action(s, cora, ids[:2], "tag", tag="night")["n_changed"] == 0    # already tagged
        undo_batch(s, cora, t["batch_id"])
        assert gallery.gallery_page(s, gallery.parse_query({"tag": ["night"]}))["total"] == 1
        assert tags.notes_of(s, ids[0])["tags"] == [{"tag": "night", "label": label}]
        with pytest.raises(UserError, match="no distractor"):
            tags.add_comment(s, cora, ids[0], "hm", label="Z")
        tags.add_comment(s, cora, ids[0], "  too close to the target  ", label=label)
        assert tags.notes_of(s, ids[0])["comments"][0]["text"] == "too close to the target"


def test_admin_overview_per_curator_and_video(store_db):
    from db.review.overview import curator_overview, video_overview
    ids = _ids(store_db)
    with store_db.Session() as s:
        ada, cora = _user(s, "ada", "admin"), _user(s, "cora", "curator")
        _user(s, "rhea", "researcher")
        review.set_overlap(s, 2)
        s.commit()
        p = review.next_puzzle(s, cora)
        review.submit_verdict(s, cora, p, "accept", seconds=30.0)
        bulk_action(s, ada, ids[:2], "accept")
        rows = {r["name"]: r for r in curator_overview(s)}
        assert set(rows) == {"ada", "cora"}
        assert rows["cora"]["verdicts"] == 1 and rows["cora"]["per_hour"] == pytest.approx(120.0)
        assert rows["cora"]["last_24h"] == 1 and rows["ada"]["per_hour"] is None      # bulk: no time spent
        assert rows["cora"]["queue_left"] == len(ids) - 1
        assert rows["cora"]["overlap_left"] == (1 if p in ids[:2] else 2)       # started by ada, not by cora
        assert rows["ada"]["shared"] == rows["cora"]["shared"] == (1 if p in ids[:2] else 0)
        videos = video_overview(s)
        assert sum(v["puzzles"] for v in videos) == len(ids)
        assert sum(v["accepted"] for v in videos) == (1 if p in ids[:2] else 0)       # k = 2
        review.set_overlap(s, 1)
        s.commit()
        videos = video_overview(s)
        assert sum(v["accepted"] for v in videos) == len({p, *ids[:2]})
        assert all(0 <= v["done"] <= 1 for v in videos)


def test_exports_carry_the_tags(store_db, tmp_path):
    import json

    import pyarrow.parquet as pq

    from db.sets.export import export_set
    from testkit.store import accept_and_freeze
    ids = _ids(store_db)
    with store_db.Session() as s:
        cora = _user(s, "cora", "curator")
        bulk_action(s, cora, ids[:2], "tag", tag="night")
        tags.add_tag(s, cora, ids[0], "fast cut")
    accept_and_freeze(store_db.Session, store_db.records, "tagged", {"train": 1.0})
    with store_db.Session() as s:
        export_set(s, "tagged", "jsonl", tmp_path / "j", store_db.data_dir)
        export_set(s, "tagged", "verl", tmp_path / "v", store_db.data_dir)
        export_set(s, "tagged", "trl", tmp_path / "t", store_db.data_dir)
    manifest = json.loads((tmp_path / "j" / "set.json").read_text())
    assert manifest["tags"] == {ids[0]: ["fast cut", "night"], ids[1]: ["night"]}
    rows = pq.read_table(tmp_path / "v" / "train.parquet").to_pylist()
    got = {r["extra_info"]["puzzle_id"]: list(r["extra_info"]["tags"]) for r in rows}
    assert got[ids[0]] == ["fast cut", "night"] and got[ids[2]] == []
    trl = pq.read_table(tmp_path / "t" / "train.parquet").to_pylist()
    assert sorted(len(r["tags"]) for r in trl)[-1] == 2
