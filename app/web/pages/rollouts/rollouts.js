// The Rollouts page's client: fills the four panes (puzzle, left and right answers, run) from the
// page's view API (/rollouts/api/view, see app/web/pages/rollouts/api.py) instead of Gradio events, so a
// puzzle switch is one small fetch, not Gradio's run/predict plus a re-render (docs/web.md).
//
// The first view is fetched as soon as this script runs (the server picks the page's default
// selection), while Gradio is still starting; its images start loading at once and it is painted
// the moment Gradio has drawn the panes. The page's controls then call `show(left, right, puzzle)`
// (app/web/pages/rollouts/page.py SHOW_JS); a selection already shown is not fetched again, and only the
// newest selection's answer is painted.
(function () {
  "use strict";
  if (window.mvpRollouts || !/^\/rollouts\/?$/.test(location.pathname)) return;   // shared page head

  const API = "/rollouts/api/view";
  const PANES = ["ro-pane-puzzle", "ro-pane-left", "ro-pane-right", "ro-pane-info"];
  const $ = (id) => document.getElementById(id);
  const keyOf = (l, r, p) => [l || "", r || "", p || ""].join("\n");
  let seq = 0;              // the newest request; older answers are dropped
  let shown = null;         // key of the painted selection
  let asked = null;         // {key, done} of the request in flight, if any
  let pending = null;       // an answer waiting for Gradio to draw the panes
  let observer = null;

  function preload(html) {
    const t = document.createElement("template");
    t.innerHTML = html.join("");
    t.content.querySelectorAll("img[src]").forEach((img) => { new Image().src = img.getAttribute("src"); });
  }

  function paint(d) {
    if (!PANES.every($)) { pending = d; waitForPanes(); return; }
    PANES.forEach((id, i) => { $(id).innerHTML = d.html[i]; });
    shown = keyOf(d.left, d.right, d.puzzle);
    document.dispatchEvent(new CustomEvent("mvp-rollouts", { detail: { type: "shown", puzzle: d.puzzle } }));
  }

  function waitForPanes() {
    if (observer) return;
    observer = new MutationObserver(() => {
      if (!pending || !PANES.every($)) return;
      observer.disconnect();
      observer = null;
      const d = pending;
      pending = null;
      paint(d);
    });
    observer.observe(document.documentElement, { childList: true, subtree: true });
  }

  function fail(text) {
    const box = $("ro-pane-puzzle");
    if (!box) return;
    const p = document.createElement("p");
    p.className = "mvp-msg mvp-msg-warn";
    p.textContent = "Could not load this view: " + text;
    box.replaceChildren(p);
    shown = null;
  }

  async function fetchView(params) {
    const my = ++seq;
    let resp, d;
    try {
      resp = await fetch(API + "?" + new URLSearchParams(params), { credentials: "same-origin" });
      d = await resp.json();
    } catch (e) {
      if (my === seq) fail(resp ? `HTTP ${resp.status}` : "the server did not answer");
      return;
    }
    if (my !== seq) return;
    if (!resp.ok || d.error) { fail(d.error || `HTTP ${resp.status}`); return; }
    preload(d.html);
    paint(d);
  }

  const first = fetchView({});          // the default view, fetched before Gradio has started

  async function show(left, right, puzzle) {
    await first;                         // usually the same selection: then nothing more to fetch
    const key = keyOf(left, right, puzzle);
    if (asked) {
      if (asked.key === key) return asked.done;      // Gradio may fire one input twice
    } else if (key === shown) return;                // nothing in flight, and this is on screen
    if (!left || !puzzle) { ++seq; paint({ left, right, puzzle, html: ["", "", "", ""] }); return; }
    const params = { left, puzzle };
    if (right) params.right = right;
    const mine = { key, done: null };
    mine.done = fetchView(params).finally(() => { if (asked === mine) asked = null; });
    asked = mine;
    return mine.done;
  }

  window.mvpRollouts = { show, shown: () => shown };
})();
