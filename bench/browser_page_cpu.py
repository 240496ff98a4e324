"""CPU a browser test pays per page: Chromium (every process it starts) and `mvp serve`, for one fresh
browser context that logs in and opens a studio page until its main component is there, the way
tests/fixtures_web.py `login` does. Chromium's share of the suite's CPU is about a quarter
(docs/BENCHMARKS.md, "Suite"), so this measures which launch flags make a page load cheaper, side by
side in one run: each variant runs in its own worker process (the driver and every Chromium process
are its descendants, so wait4's rusage holds their CPU), interleaved over --repeats.

Variants: `tests` = the tests' launch (testkit.web TEST_CHROMIUM, Debian's chromium-headless-shell, with
CHROMIUM_ARGS); `full-chromium` = the same flags on /usr/bin/chromium, whose --headless is the whole browser
without a window (the tests' launch before); `one-renderer` adds flags that keep Chromium to one renderer
process without site isolation; `reuse` is the tests' launch with one context reused for every load (what
sharing a logged-in context across tests would save); `tabs` is one context with a new tab for each load
(what tests/fixtures_web.py `open_as` does), `tabs-per-site` the same with --process-per-site (the tabs
of one site share a renderer process, and so its V8 isolate), `persistent` a new tab each load in a
persistent profile (a disk cache, where Chromium keeps compiled scripts). `--variants` picks some.
With --compare OLD_TREE a second server runs from that tree and `tests` loads its pages too
(`tests@compare`), interleaved with the rest: the server's CPU per page of this tree beside the old one's.

Usage: .venv/bin/python bench/browser_page_cpu.py [--loads 6] [--repeats 3] [--page /train/] [--compare OLD_TREE]"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.measure import cpu_seconds, load_avg  # noqa: E402
from testkit.web import CHROMIUM, CHROMIUM_ARGS, TEST_CHROMIUM, browser_login, fill_login  # noqa: E402

USER, PASSWORD = "ada", "ada-bench-password-1"
ONE_RENDERER = ["--renderer-process-limit=1", "--disable-site-isolation-trials",
                "--disable-features=site-per-process,IsolateOrigins,Translate,MediaRouter,OptimizationHints"]
VARIANTS = {"tests": (TEST_CHROMIUM, CHROMIUM_ARGS), "full-chromium": (CHROMIUM, CHROMIUM_ARGS),
            "one-renderer": (TEST_CHROMIUM, CHROMIUM_ARGS + ONE_RENDERER), "reuse": (TEST_CHROMIUM, CHROMIUM_ARGS),
            "tabs": (TEST_CHROMIUM, CHROMIUM_ARGS),
            "tabs-per-site": (TEST_CHROMIUM, CHROMIUM_ARGS + ["--process-per-site"]),
            "persistent": (TEST_CHROMIUM, CHROMIUM_ARGS)}


def worker(variant: str, url: str, page_path: str, loads: int) -> None:
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        exe, args = VARIANTS[variant]
        if variant == "persistent":
            b = None
            ctx = p.chromium.launch_persistent_context(profile, executable_path=exe, headless=True,
                                                       args=args)
        else:
            b = p.chromium.launch(executable_path=exe, headless=True, args=args)
            ctx = None
        for _ in range(loads):
            if variant == "reuse" and ctx is not None:
                page = ctx.pages[0]
                page.goto(url + page_path)
            elif variant.startswith("tabs") or variant == "persistent":
                if ctx is None:
                    ctx, page = browser_login(b, url, USER, PASSWORD, path=page_path)
                else:
                    if ctx.pages:
                        ctx.pages[-1].close()
                    page = ctx.new_page()
                    page.goto(url + page_path)
                    if page.url.split("?")[0].endswith("/login"):
                        fill_login(page, USER, PASSWORD)
            else:
                if ctx is not None:
                    ctx.close()
                ctx, page = browser_login(b, url, USER, PASSWORD, path=page_path)
            page.wait_for_selector("#mvp-nav, nav", timeout=120000)
            page.wait_for_load_state("networkidle", timeout=120000)
        ctx.close()
        if b is not None:
            b.close()


def run_worker(variant: str, url: str, page_path: str, loads: int, server_pid: int) -> tuple[float, float]:
    """(CPU seconds of the worker and all its descendants, of the server) per page load."""
    s0 = cpu_seconds(server_pid)
    p = subprocess.Popen([sys.executable, __file__, "--worker", variant, "--url", url, "--page", page_path,
                          "--loads", str(loads)], cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"{variant}: the worker failed")
    return (usage.ru_utime + usage.ru_stime) / loads, (cpu_seconds(server_pid) - s0) / loads


def start_server(tree: Path, data: Path) -> tuple[subprocess.Popen, str]:
    """`mvp serve` from `tree` on a new data directory holding the one admin; returns (process, base URL)
    once /login answers (bench/web_rollouts.py `serve`)."""
    from bench.web_rollouts import serve
    subprocess.run([sys.executable, "-m", "app.cli", "users", "add", USER, "--role", "admin", "--password",
                    PASSWORD, "--data", str(data)], cwd=tree, env=dict(os.environ, MVP_QUIET="1"), check=True,
                   capture_output=True)
    return serve(data, f"sqlite:///{data / 'mvp.sqlite'}", tree)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loads", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--page", default="/train/")
    ap.add_argument("--compare", type=Path, help="an older tree, whose server's pages load beside this one's")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    ap.add_argument("--worker")
    ap.add_argument("--url")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.url, a.page, a.loads)
        return 0
    trees = {"current": ROOT, **({"compare": a.compare.resolve()} if a.compare else {})}
    runs = [(v, "current") for v in a.variants.split(",")] + ([("tests", "compare")] if a.compare else [])
    with tempfile.TemporaryDirectory() as td:
        servers = {name: start_server(tree, Path(td) / name) for name, tree in trees.items()}
        try:
            got: dict[str, list[tuple[float, float]]] = {}
            for r in range(a.repeats):
                for v, srv in runs:
                    key = v if srv == "current" else f"{v}@{srv}"
                    proc, url = servers[srv]
                    got.setdefault(key, []).append(run_worker(v, url, a.page, a.loads, proc.pid))
                    print(f"  repeat {r + 1} {key}: browser {got[key][-1][0]:.2f} s, server {got[key][-1][1]:.2f} s "
                          f"of CPU per page", flush=True)
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(timeout=20)
    base = statistics.median(x for x, _ in got["tests"])
    print(f"\nCPU seconds per page load of {a.page} (median of {a.repeats} runs of {a.loads} loads; load average "
          f"{load_avg()}):")
    for v, xs in got.items():
        b, s = statistics.median(x for x, _ in xs), statistics.median(y for _, y in xs)
        print(f"  {v:14s} browser {b:5.2f} s ({b / base:.2f}x the tests')   server {s:5.2f} s")
    print(json.dumps({v: [list(x) for x in xs] for v, xs in got.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
