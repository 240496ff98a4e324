"""Security probe: files. Every file of a populated data directory is requested through every route
that serves files, as an admin and as a curator; only media (frames, thumbnails, preview clips) come
back, byte for byte. The database, its WAL/SHM, JSONL, runs, models, jobs, exports and configs never do
(app/web/files.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_security import PASSWORD, http_login
from fixtures_web import PASSWORDS

pytestmark = [pytest.mark.browser]
MEDIA = (("frames/", (".jpg",)), ("thumbs/", (".jpg",)), ("cache/clips/", (".mp4",)))


def is_media(rel: str) -> bool:
    return any(rel.startswith(d) and rel.endswith(sfx) and "/." not in rel for d, sfx in MEDIA)


def render_a_clip(data, Session) -> None:
    """A real H.264 clip of stored frames in cache/clips/, the folder preview clips are served from."""
    import numpy as np
    from PIL import Image

    from testkit.videos import write_video
    imgs = [np.asarray(Image.open(p).convert("RGB").resize((160, 96))) for p in sorted((data / "frames").rglob("*.jpg"))[:8]]
    out = data / "cache" / "clips" / "gap.mp4"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_video(out, imgs, fps=4)
    assert out.is_file() and out.stat().st_size > 1000


def test_only_media_files_are_served(sec_server, sec_data):
    data, _, Session = sec_data
    admin = http_login(sec_server.url, "ada", PASSWORDS["ada"])
    curator = http_login(sec_server.url, "cur01", PASSWORD["cur01"])
    render_a_clip(data, Session)
    files = sorted(p for p in data.rglob("*") if p.is_file())
    rels = [p.relative_to(data).as_posix() for p in files]
    must_exist = ["mvp.sqlite", "mvp.sqlite-wal", "mvp.sqlite-shm", "puzzles.jsonl", "models/tiny/config.json",
                  "runs/20260101-000000-set/config.yaml", "train/active.json", "exports/set1/puzzles.jsonl"]
    assert set(must_exist) <= set(rels), sorted(set(must_exist) - set(rels))
    assert any(r.startswith("cache/clips/") and r.endswith(".mp4") for r in rels)
    assert sum(r.startswith("frames/") for r in rels) > 20 and any(r.startswith("thumbs/") for r in rels)
    served, refused = [], []
    for path, rel in zip(files, rels):
        # never open the database's files in this process: it holds SQLite connections of its own,
        # and opening and closing the file would drop their locks (the very failure under test)
        body = b"SQLite format 3" if rel.startswith("mvp.sqlite") else path.read_bytes()
        for who, c in (("admin", admin), ("curator", curator)):
            r = c.get(f"/data/{rel}")
            if is_media(rel):
                assert r.status_code == 200 and r.content == body, (who, rel, r.status_code)
                served.append(rel)
            else:
                assert r.status_code in (403, 404), (who, rel, r.status_code)
                assert len(body) < 8 or body[:64] not in r.content, (who, rel)
                refused.append(rel)
        t = admin.get(f"/thumb/{rel}")
        assert t.status_code == 200 if rel.startswith("frames/") and rel.endswith(".jpg") \
            else t.status_code in (403, 404), ("thumb", rel, t.status_code)
        if not is_media(rel):                         # Gradio's own file route serves none of ours
            g = admin.get(f"/curate/gradio_api/file={path}")
            assert g.status_code != 200, (rel, g.status_code)
    assert "mvp.sqlite" in refused and "mvp.sqlite-wal" in refused and served
    # symlinks inside a media folder pointing at the database are refused on the real path
    link = data / "frames" / "db.jpg"
    link.symlink_to(data / "mvp.sqlite")
    try:
        r = admin.get("/data/frames/db.jpg")
        assert r.status_code == 403 and b"SQLite format" not in r.content
    finally:
        link.unlink()
    # a file in frames/ that is no image: its thumbnail is a one-line 415, not a server error
    junk = data / "frames" / "junk.jpg"
    junk.write_bytes(b"\x00not a jpeg" * 100)
    try:
        r = admin.get("/thumb/frames/junk.jpg")
        assert r.status_code == 415 and "not a readable image" in r.json()["error"], (r.status_code, r.text)
        assert not list((data / "thumbs").rglob(".junk.jpg*"))        # no half-written thumbnail left
    finally:
        junk.unlink()
    print(f"{len(set(served))} media files served, {len(set(refused))} other files refused")


def test_curator_cannot_reach_the_database_by_any_spelling(sec_server):
    c = http_login(sec_server.url, "cur02", PASSWORD["cur02"])
    for path in ("/data/mvp.sqlite", "/data/./mvp.sqlite", "/data/frames/../mvp.sqlite",
                 "/data/frames/%2e%2e/mvp.sqlite", "/data/mvp.sqlite-wal", "/data/MVP.SQLITE",
                 "/data/frames%2F..%2Fmvp.sqlite", "/thumb/mvp.sqlite", "/data/puzzles.jsonl",
                 "/curate/gradio_api/file=mvp.sqlite", "/curate/gradio_api/file=data/mvp.sqlite",
                 "/datasets/export/..%2Fmvp.sqlite", "/datasets/export/mvp.sqlite"):
        r = c.get(path)
        assert r.status_code in (400, 403, 404, 405), (path, r.status_code)
        assert b"SQLite format" not in r.content and b'"answer"' not in r.content, path
