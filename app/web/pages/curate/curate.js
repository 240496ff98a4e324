// The curate page's client: renders the puzzle view from the JSON API (/curate/api/<action>, see
// app/web/pages/curate/api.py) instead of Gradio events, so a verdict costs one small fetch, not a Gradio
// queue/SSE round trip plus a re-render.
//
// Verdicts are shown optimistically: every answer carries `next`, the puzzle a verdict on the shown
// one will most likely lead to, already rendered; this script builds its DOM off-page and decodes
// its images while the curator looks at the current puzzle, and swaps it in on the key press while
// the verdict is posted. The server's answer then confirms it (same puzzle and HTML: nothing
// changes) or corrects it (another puzzle: it is shown instead); a refused verdict puts the
// previous puzzle back with the error. Actions run one at a time in key order, and each applies
// only to the puzzle that was on screen when its key was pressed.
//
// Solve first, then vet: while the shown puzzle is blind (data-phase="answer") a digit puts that
// option into the next gap slot here in the page, with no request (so no answer and no timing can
// differ between targets and distractors); Enter sends the picks as the answer, and the server
// answers with the revealed view. Play-in-gap (p, Shift+digit) shows the chosen sequence inside the
// gap, with the context before and after highlighted in turn, from the full-size frames; nothing is
// rendered on the server. The tab's state is kept in sessionStorage, so a reload keeps its place.
(function () {
  "use strict";
  if (window.mvpCurate) return;

  let st = null;            // {pid, back, fwd, filter}: this tab's navigation state (server checks it)
  let picks = [];           // labels picked into the gap while solving the shown puzzle
  let shownAt = performance.now();
  let player = null;        // the running play-in-gap timer
  const SAVE_KEY = "mvp-curate-state";
  // A verdict (on the puzzle, or on one distractor) on its way is kept here until the server has it:
  // if the session ended meanwhile (static/session.js takes the tab to the login page), it is sent
  // after the login, by the same user. The 401 takes the tab away at once, so at most one is kept.
  const PENDING_KEY = "mvp-curate-pending";
  const FRAME_MS = 600;     // each frame of a played sequence, as the clips used to
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

  function show(node) {
    const s = $("mvp-stage");
    if (!s) return;
    stopPlay();
    const before = shownPid();
    s.replaceChildren(node);
    if (shownPid() !== before) { picks = []; shownAt = performance.now(); }
    else drawPicks();
  }

  function save(s) {
    try { if (s || st) sessionStorage.setItem(SAVE_KEY, JSON.stringify(s || st)); } catch (e) { /* private mode */ }
  }
  function saved() { try { return JSON.parse(sessionStorage.getItem(SAVE_KEY) || "null"); } catch (e) { return null; } }
  const whoami = () => { const el = document.querySelector(".mvp-user[data-user]"); return el ? el.dataset.user : null; };
  function keepPending(p) { try { localStorage.setItem(PENDING_KEY, JSON.stringify(p)); } catch (e) { /* private mode */ } }
  function dropPending() { try { localStorage.removeItem(PENDING_KEY); } catch (e) { /* private mode */ } }
  function pending() { try { return JSON.parse(localStorage.getItem(PENDING_KEY) || "null"); } catch (e) { return null; } }
  const phase = () => { const el = $("mvp-puzzle"); return el ? el.dataset.phase : "none"; };
  const gapSize = () => { const el = $("mvp-puzzle"); return el ? Number(el.dataset.m || 0) : 0; };
  const optCard = (i) => document.querySelector(`#mvp-puzzle .mvp-opt[data-index="${i}"]`);
  const cardOf = (label) => document.querySelector(`#mvp-puzzle .mvp-opt[data-label="${CSS.escape(label)}"]`);

  function prepare(n) {
    // the same puzzle predicted again (an answer's reply names the next puzzle the load did): keep the
    // prepared view, whose images have been loading and decoding since
    if (n && next && next.pid === n.pid && next.html === n.html) return;
    next = null;
    if (!n) return;
    const node = nodeFor(n.html);
    node.querySelectorAll("img").forEach((img) => img.decode().catch(() => null));
    next = { pid: n.pid, html: n.html, node };
  }

  function apply(data) {
    st = data.state;
    save();
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
    if (!r.ok) {
      const err = new Error((data && data.error) || `${r.status} ${r.statusText}`);
      err.status = r.status;
      throw err;
    }
    return data;
  }

  // `call`, with the request kept (PENDING_KEY) until the server has it; `what` names it to the curator
  async function callKept(action, body, what) {
    keepPending({ user: whoami(), pid: body.state && body.state.pid, action, body, what });
    try {
      const data = await call(action, body);
      dropPending();
      return data;
    } catch (e) {
      if (e.status === 401 && window.mvpSession) window.mvpSession.toLogin();   // kept for after the login
      else dropPending();
      throw e;
    }
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

  function verdict(v) {
    return onShown(async () => {
      if (!st) return;
      if (v !== "skip" && phase() === "answer") { showMsg(ANSWER_FIRST, "warn"); return; }
      const before = { st, next, node: $("mvp-stage") && $("mvp-stage").firstElementChild };
      const note = noteBox() ? noteBox().value : "";
      const guess = st.pid && next ? next : null;
      if (guess) {                        // optimistic: show the prepared next puzzle now
        show(guess.node);
        // what a reload should come back to, should it happen before the server answers
        save({ pid: guess.pid, back: st.back.concat([st.pid]), fwd: st.fwd.slice(0, -1) });
        showMsg(`${v}: ${st.pid}`, "info");
        next = null;
      }
      setNote("");
      let data;
      try {
        data = await callKept("verdict", { state: st, verdict: v, note }, v);
      } catch (e) {
        st = before.st; next = before.next; save();
        if (guess && before.node) show(before.node);
        setNote(note);
        throw e;
      }
      if (guess && data.state.pid === guess.pid && data.html === guess.html) {
        st = data.state; save(); prepare(data.next); showMsg(data.msg, data.kind);
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

  const ANSWER_FIRST = "solve first: pick the options that fill the gap in order (digits), then press Enter";

  // ---- solving: picks live in the page until Enter --------------------------------------------

  function drawPicks() {
    document.querySelectorAll("#mvp-puzzle .mvp-gap-slot[data-slot]").forEach((slot) => {
      const label = picks[Number(slot.dataset.slot)];
      const card = label && cardOf(label);
      slot.replaceChildren();
      slot.classList.toggle("picked", !!card);
      if (!card) { slot.textContent = "?"; return; }
      const img = document.createElement("img");
      img.src = card.querySelector("img").src;
      img.alt = "";
      const cap = document.createElement("div");
      cap.className = "mvp-cap";
      cap.textContent = label;
      slot.append(img, cap);
    });
    document.querySelectorAll("#mvp-puzzle .mvp-opt").forEach((c) => c.classList.toggle("picked", picks.includes(c.dataset.label)));
  }

  function pick(index) {
    const card = optCard(index);
    if (!card) { showMsg(`this puzzle has no option ${index}`, "warn"); return; }
    const label = card.dataset.label;
    if (picks.includes(label)) picks = picks.filter((x) => x !== label);
    else if (picks.length < gapSize()) picks.push(label);
    else { showMsg(`the gap holds ${gapSize()} frames: Backspace takes one back`, "warn"); return; }
    showMsg("", "info");
    drawPicks();
  }

  function unpick() { picks.pop(); drawPicks(); }

  function submitAnswer() {
    return onShown(async () => {
      if (!st || phase() !== "answer") return;
      if (picks.length !== gapSize()) { showMsg(`pick ${gapSize()} options for the gap first`, "warn"); return; }
      const seconds = Math.round((performance.now() - shownAt) / 100) / 10;
      apply(await call("answer", { state: st, labels: picks.slice(), seconds }));
      emit("answered", { pid: st.pid });
    });
  }

  // ---- play-in-gap: the sequence inside the gap, context before and after -----------------------

  function stopPlay() {
    if (player) { clearTimeout(player.timer); player.restore(); player = null; }
  }

  // A frame to show now: the full-size one once it is decoded, until then the thumbnail the page
  // already shows (decoded), so playing starts at once and sharpens as the full frames arrive.
  function frameSource(step) {
    const full = new Image();
    full.src = step.url;
    step.ready = false;
    full.decode().then(() => { step.ready = true; }, () => null);
    return full;
  }

  async function playLabels(labels, what) {
    stopPlay();
    const gap = $("mvp-gap");
    if (!gap || !labels.length) { showMsg("nothing to play: pick options first", "warn"); return; }
    const strip = Array.from(document.querySelectorAll("#mvp-puzzle .mvp-filmstrip > .mvp-frame"));
    const before = strip.filter((f) => f.compareDocumentPosition(gap) & Node.DOCUMENT_POSITION_FOLLOWING);
    const after = strip.filter((f) => f.compareDocumentPosition(gap) & Node.DOCUMENT_POSITION_PRECEDING);
    const thumb = (el) => el.querySelector("img").src;
    const steps = [...before.map((f) => ({ el: f, url: f.dataset.full, thumb: thumb(f), cap: "before the gap" })),
      ...labels.map((l) => ({ el: gap, url: cardOf(l).dataset.full, thumb: thumb(cardOf(l)), cap: l })),
      ...after.map((f) => ({ el: f, url: f.dataset.full, thumb: thumb(f), cap: "after the gap" }))];
    const t0 = performance.now();
    const screen = document.createElement("div");
    screen.className = "mvp-player";
    const img = document.createElement("img");
    img.alt = "";
    const cap = document.createElement("div");
    cap.className = "mvp-cap";
    screen.append(img, cap);
    const saved = Array.from(gap.childNodes);
    const me = { timer: null, restore: () => { steps.forEach((s) => s.el.classList.remove("mvp-playing")); gap.replaceChildren(...saved); gap.classList.remove("playing"); } };
    player = me;
    const fulls = steps.map(frameSource);
    gap.replaceChildren(screen);
    gap.classList.add("playing");
    gap.scrollIntoView({ block: "nearest" });
    let i = 0;
    const draw = (s, k) => {
      img.src = s.ready ? fulls[k].src : s.thumb;
      img.dataset.full = s.url;                  // which frame this is, whatever its resolution
      if (!s.ready) fulls[k].decode().then(() => { if (player === me && img.dataset.full === s.url) img.src = fulls[k].src; }, () => null);
    };
    const step = () => {
      if (player !== me) return;
      if (i >= steps.length) { stopPlay(); emit("played", { labels }); return; }
      const s = steps[i];
      steps.forEach((x) => x.el.classList.toggle("mvp-playing", x === s && x.el !== gap));
      draw(s, i);
      cap.textContent = `${what}: ${s.cap}`;
      if (i === 0) emit("play-started", { ms: performance.now() - t0, labels });
      i += 1;
      me.timer = setTimeout(step, FRAME_MS);
    };
    step();
  }

  function playPicks() {
    if (phase() === "vet") {   // after the answer: the true frames (the page names them now)
      const tgt = ($("mvp-puzzle").dataset.answer || "").split(",").filter(Boolean);
      return playLabels(tgt, "the true frames");
    }
    return playLabels(picks, "your picks");
  }

  function play(index) {
    const card = optCard(index);
    if (!card) { showMsg(`this puzzle has no option ${index}`, "warn"); return; }
    return playLabels([card.dataset.label], `option ${card.dataset.label}`);
  }

  function digit(index) {
    if (phase() === "answer") pick(index);
    else if (phase() === "vet") toggle(index);
  }

  // A distractor's keep / reject (`to`; none: the other of its state), kept like a puzzle verdict
  function judgeOption(index, to, why) {
    return onShown(async () => {
      if (!st) return;
      const card = optCard(index);
      const now = to || (card && card.dataset.state === "reject" ? "keep" : "reject");
      apply(await callKept("toggle", { state: st, index, to, reason: why },
                           `${now} option ${card ? card.dataset.label : index}`));
    });
  }

  // a card's own controls (mouse and touch): Keep / Reject, and a new reason re-rejects a rejected card
  function setOption(card, to) {
    const why = card.querySelector(".mvp-card-reason");
    return judgeOption(Number(card.dataset.index), to, why ? why.value : reason());
  }
  document.addEventListener("change", (e) => {
    const sel = e.target.closest && e.target.closest("#mvp-puzzle[data-phase=vet] .mvp-card-reason");
    const card = sel && sel.closest(".mvp-opt");
    if (card && card.dataset.state === "reject") setOption(card, "reject");
  });

  function toggle(index) { return judgeOption(index, undefined, reason()); }

  // The queue filter: the server claims the next puzzle among the matching ones and lists them all.
  const FILTER_FIELDS = [["video", "mvp-filter-video"], ["status", "mvp-filter-status"], ["kind", "mvp-filter-kind"],
    ["min_difficulty", "mvp-filter-dmin"], ["max_difficulty", "mvp-filter-dmax"]];

  // The video filter can be typed into (a hundred names are not a list to scroll): a search box
  // with the videos' names (a datalist) drives the select, which stays what filterValues reads.
  function searchable(sel) {
    if (!sel) return;
    if (!sel.dataset.searchable) {
      sel.dataset.searchable = "1";
      const list = document.createElement("datalist");
      list.id = sel.id + "-names";
      [...sel.options].forEach((o) => { if (o.value) list.append(new Option(o.text)); });
      const box = document.createElement("input");
      Object.assign(box, { type: "search", id: sel.id + "-find", placeholder: "type a video name" });
      box.setAttribute("list", list.id);
      box.setAttribute("aria-label", "find a video by name");
      box.addEventListener("input", () => {
        const o = [...sel.options].find((x) => x.value && x.text === box.value);
        if (o) sel.value = o.value; else if (!box.value) sel.value = "";
      });
      sel.addEventListener("change", () => { box.value = sel.value ? sel.selectedOptions[0].text : ""; });
      sel.after(box, list);
    }
    queueMicrotask(() => {        // after showFilter has set the select: the box says the same
      const box = $(sel.id + "-find");
      if (box && document.activeElement !== box) box.value = sel.value ? sel.selectedOptions[0].text : "";
    });
  }

  function showFilter() {
    searchable($("mvp-filter-video"));
    const f = (st && st.filter) || {};
    const parts = [];
    FILTER_FIELDS.forEach(([key, id]) => {
      const el = $(id);
      if (!el) return;
      el.value = f[key] === undefined || f[key] === null ? "" : String(f[key]);
      if (el.value !== "") parts.push(`${key.replace("_", " ")} ${el.tagName === "SELECT" ? el.selectedOptions[0].text : el.value}`);
    });
    const now = $("mvp-filter-now");
    if (now) now.textContent = parts.length ? "your queue: " + parts.join(", ") : "your queue: every puzzle";
  }

  function filter(filters) {
    return enqueue(async () => {
      const d = await call("filter", { state: st, filters });
      apply(d);
      showFilter();
      const box = $("mvp-list-box");
      if (box) box.innerHTML = d.list || "";
      refreshProgress();
    });
  }

  function filterValues() {
    const out = {};
    FILTER_FIELDS.forEach(([key, id]) => {
      const el = $(id);
      if (!el || el.value === "") return;
      out[key] = el.type === "number" ? Number(el.value) : el.value;
    });
    return out;
  }

  // a puzzle opened from the list: shown in place (history and filter kept), not leased
  function open(pid) {
    return enqueue(async () => { apply(await call("load", { puzzle: pid, state: st })); });
  }

  // tags and comments on the shown puzzle (the view comes back re-rendered; picks are kept)
  function note(action, body) {
    const pid = shownPid();
    return enqueue(async () => {
      if (!pid || pid !== shownPid()) return;
      apply(await call(action, { state: st, ...body }));
    });
  }
  function addTag() {
    const box = $("mvp-cnote-tag"), tag = box ? box.value.trim() : "";
    if (!tag) { showMsg("write the tag first", "warn"); if (box) box.focus(); return; }
    note("tag", { tag });
  }
  function addComment() {
    const box = $("mvp-cnote-text"), text = box ? box.value.trim() : "";
    if (!text) { showMsg("write the comment first", "warn"); if (box) box.focus(); return; }
    note("comment", { text });
  }
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !e.target.closest) return;
    if (e.target.closest("#mvp-cnote-tag")) { e.preventDefault(); addTag(); }
    else if (e.target.closest("#mvp-cnote-text")) { e.preventDefault(); addComment(); }
  });

  document.addEventListener("click", (e) => {
    if (!e.target.closest) return;
    if (e.target.closest("#mvp-cnote-addtag")) { addTag(); return; }
    if (e.target.closest("#mvp-cnote-comment")) { addComment(); return; }
    const untag = e.target.closest("#mvp-puzzle .mvp-untag");
    if (untag) { e.preventDefault(); note("untag", { tag: untag.dataset.tag, label: untag.dataset.label || "" }); return; }
    if (e.target.closest("#mvp-filter-go")) { filter(filterValues()); return; }
    if (e.target.closest("#mvp-filter-clear")) { filter({}); return; }
    const link = e.target.closest("#mvp-list-box a.mvp-open");
    if (link) { e.preventDefault(); open(link.dataset.puzzleId); return; }
    const ctl = e.target.closest("#mvp-puzzle[data-phase=vet] .mvp-card-ctl button");
    if (ctl) { e.preventDefault(); setOption(ctl.closest(".mvp-opt"), ctl.dataset.to); return; }
    const card = e.target.closest("#mvp-puzzle[data-phase=answer] .mvp-opt");
    if (card) { e.preventDefault(); pick(Number(card.dataset.index)); }
  });

  // The verdict kept when the session ended (see PENDING_KEY), sent once the same user is back:
  // {data: the server's answer or null, msg, kind}. Another user's kept verdict stays for its owner.
  // (A verdict kept before distractor verdicts were kept too has no `action`: it is a puzzle verdict.)
  async function sendPending() {
    const p = pending();
    if (!p || !p.body) return {};
    let user = whoami();
    for (let i = 0; !user && i < 50; i++) { await new Promise((ok) => setTimeout(ok, 100)); user = whoami(); }
    if (!user || p.user !== user) return {};
    const what = p.what || p.body.verdict;
    try {
      const data = await call(p.action || "verdict", p.body);
      dropPending();
      return { data, msg: `${what} on ${p.pid}, given before the login, is saved`, kind: "info" };
    } catch (e) {
      if (e.status !== 401) dropPending();
      return { msg: `${what} on ${p.pid}, given before the login, was not saved: ${e.message}`, kind: "error" };
    }
  }

  function start() {
    if (started || !$("mvp-stage")) return;
    started = true;
    // at phone width the rubric starts folded: the puzzle, not the rules, fills the first screen
    let folded = false;
    const fold = () => {
      const rubric = $("mvp-rubric");
      if (folded || !rubric) return;
      folded = true;
      if (matchMedia("(max-width: 600px)").matches) rubric.open = false;
    };
    fold();
    const q = new URLSearchParams(location.search);
    const deep = q.get("puzzle");
    enqueue(async () => {
      const sent = await sendPending();
      apply(sent.data || await call("load", { puzzle: deep, state: saved() }));
      if (sent.msg) showMsg(sent.msg, sent.kind);
      showFilter();
      refreshProgress();
    });
    if (q.get("video")) filter({ video: q.get("video") });   // the per-video view; queued after the load
    // the filter bar comes from the page's own load event and can arrive after the state: show the
    // tab's filter in it whenever Gradio (re)draws it
    let bar = null;
    new MutationObserver(() => {
      fold();
      const now = $("mvp-filter");
      if (now && now !== bar) { bar = now; showFilter(); }
    }).observe(document.documentElement, { childList: true, subtree: true });
    // the tab's state now holds what the link asked for: a reload comes back to where the tab is
    if (deep || q.get("video")) {
      q.delete("puzzle"); q.delete("video");
      history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q : "") + location.hash);
    }
  }

  window.mvpCurate = {
    start, verdict, play, playPicks, pick, unpick, submitAnswer, digit, toggle, filter, open,
    undo: simple("undo", null, refreshProgress),
    move: (step) => simple("move", () => ({ step }))(),
    state: () => st, picks: () => picks.slice(), phase,
  };

  // Gradio draws the page after this script runs: start as soon as the stage exists.
  if ($("mvp-stage")) start();
  else {
    const obs = new MutationObserver(() => { if ($("mvp-stage")) { obs.disconnect(); start(); } });
    obs.observe(document.documentElement, { childList: true, subtree: true });
  }
})();
