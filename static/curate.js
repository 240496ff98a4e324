// The curate page's client: renders the puzzle view from the JSON API (/curate/api/<action>, see
// app/web/curate_api.py) instead of Gradio events, so a verdict costs one small fetch, not a Gradio
// queue/SSE round trip plus a re-render.
//
// Verdicts are shown optimistically: every answer carries `next`, the puzzle a verdict on the shown
// one will most likely lead to, already rendered; this script builds its DOM off-page and decodes
// its images while the curator looks at the current puzzle, and swaps it in on the key press while
// the verdict is posted. The server's answer then confirms it (same puzzle and HTML: nothing
// changes) or corrects it (another puzzle: it is shown instead); a refused verdict puts the
// previous puzzle back with the error. Actions run one at a time in key order, and each applies
// only to the puzzle that was on screen when its key was pressed.
(function () {
  "use strict";
  if (window.mvpCurate) return;

  let st = null;            // {pid, back, fwd, reveal}: this tab's navigation state (server checks it)
  let next = null;          // {pid, html, node}: the prepared view a verdict will most likely show
  let chain = Promise.resolve();
  let started = false;
  let progressSeq = 0;

  const $ = (id) => document.getElementById(id);
  const api = () => ($("mvp-stage") && $("mvp-stage").dataset.curateApi) || "/curate/api/";
  const shownPid = () => { const el = $("mvp-puzzle"); return el ? el.dataset.puzzleId || "" : null; };
  const emit = (type, detail) => document.dispatchEvent(new CustomEvent("mvp-curate", { detail: { type, ...detail } }));

  function showMsg(text, kind) {
    const box = $("mvp-msg-box");
    if (!box) return;
    box.replaceChildren();
    if (!text) return;
    const d = document.createElement("div");
    d.className = "mvp-msg mvp-msg-" + (kind || "info");
    d.textContent = text;
    box.appendChild(d);
  }

  function nodeFor(html) {
    // A div owned by this document (not a <template>), so its images start loading while detached.
    const d = document.createElement("div");
    d.className = "mvp-view-inner";
    d.innerHTML = html;
    return d;
  }

  function show(node) { const s = $("mvp-stage"); if (s) s.replaceChildren(node); }

  function prepare(n) {
    next = null;
    if (!n) return;
    const node = nodeFor(n.html);
    node.querySelectorAll("img").forEach((img) => img.decode().catch(() => null));
    next = { pid: n.pid, html: n.html, node };
  }

  function apply(data) {
    st = data.state;
    show(nodeFor(data.html));
    prepare(data.next);
    showMsg(data.msg, data.kind);
  }

  async function call(action, body) {
    const r = await fetch(api() + action, {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
    });
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) throw new Error((data && data.error) || `${r.status} ${r.statusText}`);
    return data;
  }

  function enqueue(fn) {
    chain = chain.then(fn).catch((e) => showMsg(String((e && e.message) || e), "error"));
    return chain;
  }

  // An action taken on the puzzle that was on screen at the key press; if the screen moved on
  // before its turn (a corrected guess), it is dropped rather than applied to an unseen puzzle.
  function onShown(fn) {
    const seen = shownPid();
    return enqueue(async () => {
      if (st && shownPid() !== seen) { showMsg("the puzzle changed before that key was handled; press it again", "warn"); return; }
      await fn();
    });
  }

  function refreshProgress() {
    const seq = ++progressSeq;
    call("progress", {}).then((d) => {
      const box = $("mvp-progress-box");
      if (box && seq === progressSeq) box.innerHTML = d.html;
    }).catch(() => null);
  }

  function noteBox() { return document.querySelector("#mvp-note textarea, #mvp-note input"); }
  function setNote(v) {
    const el = noteBox();
    if (!el || el.value === v) return;
    el.value = v;
    el.dispatchEvent(new Event("input", { bubbles: true }));   // keep Gradio's copy in step
  }
  function reason() {
    const r = document.querySelector("#mvp-reason input[type=radio]:checked");
    return r ? r.value : "ambiguous";
  }
  function clearClip() { const c = $("mvp-clip-box"); if (c) c.replaceChildren(); }

  function verdict(v) {
    return onShown(async () => {
      if (!st) return;
      const before = { st, next, node: $("mvp-stage") && $("mvp-stage").firstElementChild };
      const note = noteBox() ? noteBox().value : "";
      const guess = st.pid && next ? next : null;
      if (guess) {                        // optimistic: show the prepared next puzzle now
        show(guess.node);
        showMsg(`${v}: ${st.pid}`, "info");
        next = null;
      }
      setNote("");
      clearClip();
      let data;
      try {
        data = await call("verdict", { state: st, verdict: v, note });
      } catch (e) {
        st = before.st; next = before.next;
        if (guess && before.node) show(before.node);
        setNote(note);
        throw e;
      }
      if (guess && data.state.pid === guess.pid && data.html === guess.html) {
        st = data.state; prepare(data.next); showMsg(data.msg, data.kind);
      } else {
        apply(data);
      }
      emit("confirmed", { pid: data.state.pid, guessed: !!guess, hit: !!guess && data.state.pid === guess.pid });
      refreshProgress();
    });
  }

  const simple = (action, extra, after) => () => onShown(async () => {
    if (!st) return;
    const data = await call(action, { state: st, ...(extra ? extra() : {}) });
    apply(data);
    if (after) after();
  });

  function play(index) {
    return onShown(async () => {
      if (!st) return;
      showMsg(`rendering option ${index} in the gap…`, "info");
      const d = await call("play", { state: st, index });
      const c = $("mvp-clip-box");
      if (c) c.innerHTML = d.clip;
      showMsg(d.msg, d.kind);
    });
  }

  function start() {
    if (started || !$("mvp-stage")) return;
    started = true;
    const deep = new URLSearchParams(location.search).get("puzzle");
    enqueue(async () => { apply(await call("load", { puzzle: deep })); refreshProgress(); });
  }

  window.mvpCurate = {
    start, verdict, play,
    undo: simple("undo", null, refreshProgress),
    move: (step) => simple("move", () => ({ step }))(),
    reveal: simple("reveal"),
    toggle: (index) => { const r = reason(); return simple("toggle", () => ({ index, reason: r }))(); },
    state: () => st,
  };

  // Gradio draws the page after this script runs: start as soon as the stage exists.
  if ($("mvp-stage")) start();
  else {
    const obs = new MutationObserver(() => { if ($("mvp-stage")) { obs.disconnect(); start(); } });
    obs.observe(document.documentElement, { childList: true, subtree: true });
  }
})();
