"""Do hard distractors lower the best shortcut solver's exact match, against random distractors
from the same video? And does the ambiguity guard hold on the stored frames? Side by side, with 95%
bootstrap intervals (mvp_core.synth.audit), on three corpora:

  samples   the four sample videos (scripts/sample_videos.py) plus generated clips with a black
            segment, a fade to white, a static title card and a strobe (testkit/videos.py)
  crops     22 videos cut from the sample videos: 5 segments of the trailer x 4 crops (full, left,
            right, centre), bikes full and left (re-encoded at 320 px); segments of one trailer
            share scenes, so they are not independent sources
  arrow     20 generated arrow-of-time videos (mvp_core.video.synthetic, --with-arrow)

Each corpus is synthesised twice with the default settings (no overlap between puzzles of a video),
once with --hardness hard and once with --hardness random, same seed.

    .venv/bin/python bench/synth_shortcuts.py [--corpora samples crops arrow] [--per-video 6]"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))                     # also testkit: what bench shares with tests
sys.path.insert(0, str(ROOT / "scripts"))

CROPS = {"full": None, "left": "iw/2:ih:0:0", "right": "iw/2:ih:iw/2:0", "centre": "iw/2:ih/2:iw/4:ih/4"}


def build(corpus: str, out: Path, videos: dict[str, Path]) -> Path:
    from testkit.videos import _fade, _title_card, cut_segment, real_frames, write_video
    out.mkdir(parents=True)
    if corpus == "samples":
        import numpy as np
        for p in videos.values():
            shutil.copy(p, out / p.name)
        fr = real_frames(videos["trailer_bbb"], 48, (320, 180), fps=1.0)
        black, white = np.zeros_like(fr[0]), np.full_like(fr[0], 255)
        write_video(out / "black_segment.mp4", fr[0:12] + [black] * 12 + fr[12:24], fps=1)
        write_video(out / "fade_to_white.mp4", fr[24:36] + _fade(fr[35], 255, 6) + [white] * 6 + fr[36:46], fps=1)
        write_video(out / "title_card.mp4", fr[2:14] + [_title_card("THE END OF PART ONE")] * 10 + fr[14:26], fps=1)
        write_video(out / "flashing.mp4", fr[10:22] + [fr[40] if k % 2 else fr[44] for k in range(12)] + fr[30:42], fps=1)
    elif corpus == "crops":
        for start in (0, 8, 16, 24, 30):
            for name, crop in CROPS.items():
                cut_segment(videos["trailer_bbb"], out / f"trailer_{start}_{name}.mp4", start, 25.0, crop=crop)
        for name in ("full", "left"):
            cut_segment(videos["bikes"], out / f"bikes_{name}.mp4", 0, 10.0, crop=CROPS[name])
    else:
        from mvp_core.video.synthetic import make_videos
        make_videos(out, 20, seed=0)
    return out


def run(folder: Path, data: Path, hardness: str, per_video: int) -> dict:
    from app.cli import main
    assert main(["synth", str(folder), "--data", str(data), "--hardness", hardness, "--per-video", str(per_video),
                 "--workers", "2", "--quiet"]) == 0
    assert main(["audit", "--data", str(data), "--json", str(data / "audit.json")]) == 0
    return json.loads((data / "audit.json").read_text())


def best(rep: dict) -> tuple[str, dict]:
    solvers = rep["groups"]["all"]["solvers"]
    name = max((s for s in solvers if s != "random"), key=lambda s: solvers[s]["exact"])
    return name, solvers[name]


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpora", nargs="*", default=["samples", "crops"])
    ap.add_argument("--per-video", type=int, default=6)
    args = ap.parse_args()
    import sample_videos
    videos = {p.stem: p for p in sample_videos.fetch()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in args.corpora:
            folder = build(corpus, Path(tmp) / corpus, videos)
            reps = {h: run(folder, Path(tmp) / f"{corpus}_{h}", h, args.per_video) for h in ("hard", "random")}
            rows.append((corpus, len(list(folder.iterdir())), reps))
    print(f"\n{'corpus':<8}{'videos':>7}{'distractors':>12}{'puzzles':>8}  {'best solver':<17}"
          f"{'exact [95% CI]':>24}{'reward [95% CI]':>24}{'chance exact':>13}  guard violations")
    for corpus, n_videos, reps in rows:
        for h, rep in reps.items():
            name, s = best(rep)
            g = rep["guard"]
            print(f"{corpus:<8}{n_videos:>7}{h:>12}{rep['n_puzzles']:>8}  {name:<17}"
                  f"{s['exact']:>8.3f} [{s['exact_ci95'][0]:.3f}, {s['exact_ci95'][1]:.3f}]"
                  f"{s['mean_reward']:>8.3f} [{s['reward_ci95'][0]:.3f}, {s['reward_ci95'][1]:.3f}]"
                  f"{rep['groups']['all']['chance_exact']:>13.4f}  {g['puzzles_with_any']} of {g['checked']}")
        hard_best = best(reps["hard"])[1]["exact"]
        rand_best = best(reps["random"])[1]["exact"]
        print(f"{corpus}: best heuristic exact, hard / random = {hard_best:.3f} / {rand_best:.3f}")


if __name__ == "__main__":
    main_()
