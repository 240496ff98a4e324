"""Rollouts and Train page timings in Chromium, against the targets of docs/BENCHMARKS.md:

1. Rollouts page, two model versions x G=8 answers each: first paint (navigation start to both
   answer groups in the page with every image decoded and a frame painted) < 1 s; switching
   puzzles (click on the puzzle in the dropdown to both new groups painted) < 300 ms.
2. Train page: launch (click) to the first live point drawn in the same tab, minus the trainer's
   own time from process start to its first logged step: < 2 s.

The page's clock measures (Date.now / performance.now in a MutationObserver), not Playwright's.
Data: puzzles by the real `mvp synth` from two sample videos; the answers of a "run" with a base
model and one checkpoint, G=8 per puzzle, scored by the real reward (the page's speed does not
depend on which model wrote them); the training run is the real `mvp train` of the tiny model.

Usage: python bench/web_rollouts.py [--reloads 5] [--switches 12] [--no-train] [--compare OLD_TREE]
(--compare: a copy of an older tree, e.g. `git archive REV | tar -x -C DIR`, served over a copy of the
same data and measured in alternating rounds in the same browser)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))                     # also testkit: what bench shares with tests
sys.path.insert(0, str(ROOT / "scripts"))
G = 8

# In the page: when a puzzle is clicked in the dropdown (capturing mousedown), and when Launch was
# pressed (Date.now, to compare with the trainer's own clock). The first live point is found by
# polling every 100 ms (POINT_JS): a MutationObserver over the whole Train page, which Gradio
# mutates on every 1 s tick, slowed the page until the point went unseen for minutes.
OBSERVE_JS = """
() => {
  window.mvpT = {down: null, click: null, point: null};
  document.addEventListener('mousedown', e => {
    if (e.target.closest && e.target.closest('li[role=option]')) window.mvpT.down = performance.now();
    if (e.target.closest && e.target.closest('#train-launch')) window.mvpT.click = Date.now();
  }, true);
}
"""
POINT_JS = """
() => {
  if (!document.querySelector('#train-reward-chart circle[data-series=reward]')) return false;
  window.mvpT.point = window.mvpT.point || Date.now();
  return true;
}
"""
# Both groups in the page (G rows each) for puzzle `old` != the shown one, every image loaded, and
# the controls filled (the panes can be painted before Gradio's load event has set the dropdowns).
READY_JS = """
(old) => {
  const pi = document.querySelector('#ro-puzzle input');
  if (!pi || !pi.value) return false;
  const v = document.querySelector('#ro-puzzle-view');
  if (!v || v.dataset.puzzleId === old) return false;
  if (document.querySelectorAll('#ro-left .mvp-answer-row').length !== %G%) return false;
  if (document.querySelectorAll('#ro-right .mvp-answer-row').length !== %G%) return false;
  const imgs = document.querySelectorAll('#ro-puzzle-box img, #ro-left img, #ro-right img');
  return Array.from(imgs).every(i => i.complete);
}
""".replace("%G%", str(G))


def mvp(*argv) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "app.cli", *map(str, argv)], cwd=ROOT, check=True, env=env,
                   stdout=subprocess.DEVNULL)


def build(data: Path) -> tuple[str, object]:
    """Synthesize, add a researcher, store G=8 answers for a base model and one checkpoint."""
    import sample_videos as sv
    from testkit.store import store_answers

    from db.engine import open_db
    from db.users.accounts import add_user
    vids = data.parent / "videos"
    vids.mkdir()
    for p in sv.fetch():
        if p.stem in ("bigbuckbunny", "bikes"):
            shutil.copy(p, vids / p.name)
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    mvp("synth", vids, "--data", data, "--db", url, "--per-video", "6", "--quiet")
    mvp("tiny-model", data / "tiny-model")
    Session = open_db(url, data)
    with Session() as s:
        add_user(s, "rhea", "researcher", "rhea-pass-1")
        s.commit()
    store_answers(Session, "bench-run", "train", str(data / "tiny-model"), 10, str(data / "tiny-model"), G, 0)
    return url, Session


def serve(data: Path, url: str, root: Path = ROOT):
    from testkit.web import free_port
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(data), "--db", url, "--port",
                             str(port)], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(base + "/login", timeout=2)
            return proc, base
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def q(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def open_rollouts(browser, base: str):
    """A logged-in page at /rollouts/ after one warm-up load (not counted: it also imports the
    training code, torch, in the server; long on a busy machine)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(f"({OBSERVE_JS})()")
    page = ctx.new_page()
    page.goto(base + "/login")
    page.fill("#login-user", "rhea")
    page.fill("#login-password", "rhea-pass-1")
    page.click("#login-submit")
    page.goto(base + "/rollouts/", wait_until="commit")
    page.wait_for_function(READY_JS, arg="", polling="raf", timeout=600000)
    return page


def rollouts_round(page, base: str, switches: int, res: dict) -> None:
    """One first paint (navigation start to both groups ready; performance.now() is relative to it)
    and `switches` puzzle switches (mousedown on the puzzle to both new groups ready), polled every
    animation frame; appended to res["first_paint_ms"] / res["switch_ms"]."""
    page.bring_to_front()
    page.goto(base + "/rollouts/", wait_until="commit")
    page.wait_for_function(READY_JS, arg="", polling="raf", timeout=60000)
    res["first_paint_ms"].append(page.evaluate("performance.now()"))
    for i in range(switches):
        old = page.locator("#ro-puzzle-view").get_attribute("data-puzzle-id")
        page.click("#ro-puzzle input")
        opts = page.locator("li[role=option]")
        opts.nth((i + 1) % opts.count()).click()
        page.wait_for_function(READY_JS, arg=old, polling="raf", timeout=60000)
        res["switch_ms"].append(page.evaluate("performance.now() - window.mvpT.down"))


def train_point(page, base: str) -> dict:
    page.goto(base + "/train/")
    page.wait_for_function("document.querySelector('#train-model input')?.value.includes('tiny-model')", timeout=60000)
    page.locator("#train-max-steps input").fill("2")
    page.locator("#train-max-len input").fill("8")
    page.click("#train-launch")
    page.wait_for_function(POINT_JS, polling=100, timeout=600000)
    t = page.evaluate("window.mvpT")
    return {"click_to_point_s": (t["point"] - t["click"]) / 1000.0}


def report(name: str, ro: dict) -> None:
    fp, sw = ro["first_paint_ms"], ro["switch_ms"]
    print(f"{name}: Rollouts page, 2 versions x G={G} answers ({len(fp)} loads, {len(sw)} switches)")
    print(f"  first paint   median {statistics.median(fp):7.0f} ms  max {max(fp):7.0f} ms   target 1000 ms  "
          f"ratio {statistics.median(fp) / 1000:.2f}")
    print(f"  switch puzzle median {statistics.median(sw):7.0f} ms  p95 {q(sw, .95):7.0f} ms   target  300 ms  "
          f"ratio {statistics.median(sw) / 300:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reloads", type=int, default=5, help="rounds: one first paint + --switches/--reloads switches")
    ap.add_argument("--switches", type=int, default=12)
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--compare", type=Path, default=None,
                    help="a copy of an older tree: served over a copy of the same data, measured in alternating "
                         "rounds in the same browser, so both see the same machine load")
    args = ap.parse_args()
    from testkit.web import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    from mvp_core.train.rundir import read_metrics
    tmp = Path(tempfile.mkdtemp(prefix="bench-web-rollouts-"))
    data = tmp / "data"
    url, Session = build(data)
    from sqlalchemy import select

    from db.models import Puzzle
    from db.sets.curated import store_set
    with Session() as s:
        store_set(s, "bench-set", list(s.scalars(select(Puzzle.record_json).order_by(Puzzle.id))), 0, 0, {})
        s.commit()
    variants = {"current": (data, url, ROOT)}
    if args.compare:
        old = tmp / "data_old"
        shutil.copytree(data, old)
        variants["compare"] = (old, f"sqlite:///{old / 'mvp.sqlite'}", args.compare.resolve())
    procs = {k: serve(d, u, r) for k, (d, u, r) in variants.items()}
    results = {k: {"first_paint_ms": [], "switch_ms": []} for k in variants}
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            pages = {k: open_rollouts(b, procs[k][1]) for k in variants}
            per = max(1, args.switches // max(1, args.reloads))
            for rnd in range(args.reloads):
                order = list(variants) if rnd % 2 == 0 else list(variants)[::-1]
                for k in order:
                    rollouts_round(pages[k], procs[k][1], per, results[k])
            print(json.dumps({"rollouts": results}), flush=True)        # kept if the train part fails
            tr = None
            if not args.no_train:
                page, base = pages["current"], procs["current"][1]
                tr = train_point(page, base)
                job = json.loads((data / "train" / "active.json").read_text())
                rows = []
                for _ in range(600):
                    rows = read_metrics(job["run_dir"])
                    if rows:
                        break
                    time.sleep(0.2)
                tr["start_to_first_step_s"] = rows[0]["time"] - job["started"]
                tr["overhead_s"] = tr["click_to_point_s"] - tr["start_to_first_step_s"]
            b.close()
    finally:
        from app.web import jobs
        jobs.stop(data, grace_s=10)
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=10)
    for k, ro in results.items():
        report(k, ro)
    if "compare" in results:
        c, o = results["current"], results["compare"]
        print(f"ratio compare/current: first paint {statistics.median(o['first_paint_ms']) / statistics.median(c['first_paint_ms']):.2f}, "
              f"switch {statistics.median(o['switch_ms']) / statistics.median(c['switch_ms']):.2f}")
    if tr:
        print(f"Train page: click to first live point {tr['click_to_point_s']:.2f} s; trainer start to first step "
              f"{tr['start_to_first_step_s']:.2f} s; overhead {tr['overhead_s']:.2f} s (target < 2 s)")
    print(f"load average before / after: {load_before} / {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(json.dumps({"rollouts": results, "train": tr}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
