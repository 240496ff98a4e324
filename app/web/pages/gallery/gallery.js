// The gallery's client (app/web/pages/gallery/page.py): the side panel, the grid of cards (the next
// page loaded when the last card nears the viewport), selection and the bulk bar, all from the JSON
// API (/gallery/api/<action>, app/web/pages/gallery/api.py).
// The query (filters, sort, first card) lives in the page's URL, so a view opens by its address; a
// saved view opens by name (?view=name). Selection: a card's box (click or tap), shift for a range, x
// or Space on a focused card (shift+x a range), or "all that match". Enter opens the card's frames
// large (static/lightbox.js).
//
// Mounted on any page's <div id="mvp-gallery" data-gallery-api="/gallery/api/">; its data attributes:
// data-gallery-url="hash" keeps the query after #gallery instead of in the page's own query string
// (the Curate page's), data-gallery-lazy="1" waits for window.mvpGallery.start() (a hidden mount),
// data-gallery-open="curate" opens a card's puzzle in the Curate page's one-puzzle view in place.
(function () {
  "use strict";
  if (window.mvpGallery) return;
  const LIST = ["video", "status", "kind", "tag"];
  const ONE = ["curator", "run", "model", "audit", "q", "sort"];
  const MAX_LIMIT = 200;                 // the API's most cards per request
  let query = {}, ids = [], total = 0, can = {}, started = false, loadingMore = false, observer = null;
  let selected = new Set(), allMatch = false, lastIndex = null, seq = 0;
  const $ = (id) => document.getElementById(id);
  const root = () => $("mvp-gallery");

  async function call(action, body) {
    const r = await fetch(root().dataset.galleryApi + action, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
    });
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) { const e = new Error(data.error || `HTTP ${r.status}`); e.status = r.status; throw e; }
    return data;
  }

  function say(text, kind, undo) {
    const box = $("mvp-gmsg");
    box.replaceChildren();
    if (!text) return;
    const d = document.createElement("div");
    d.className = "mvp-msg mvp-msg-" + (kind || "info");
    d.textContent = text;
    if (undo) {
      const b = document.createElement("button");
      b.type = "button"; b.className = "mvp-btn"; b.id = "mvp-gundo"; b.textContent = "Undo";
      b.onclick = () => run(async () => { const r = await call("undo", { batch_id: undo }); await load(false, true); say(r.msg); });
      d.append(" ", b);
    }
    box.append(d);
  }

  async function run(fn) {
    try { await fn(); } catch (e) { if (e.status !== 401) say(e.message, "error"); }
  }

  // ---- the query <-> the URL and the panel ------------------------------------------------------
  const inHash = () => root() && root().dataset.galleryUrl === "hash";
  function params() {
    if (!inHash()) return new URLSearchParams(location.search);
    const h = location.hash;
    return new URLSearchParams(h.startsWith("#gallery?") ? h.slice("#gallery?".length) : "");
  }

  function fromUrl() {
    const p = params(), q = {};
    for (const k of LIST) if (p.getAll(k).length) q[k] = p.getAll(k);
    for (const k of ONE) if (p.get(k)) q[k] = p.get(k);
    if (p.get("desc") === "1") q.desc = true;
    if (p.get("offset")) q.offset = Number(p.get("offset")) || 0;
    if (p.get("limit")) q.limit = Math.min(MAX_LIMIT, Math.max(1, Number(p.get("limit")) || 48));
    return q;
  }

  function toUrl(q, push) {
    const p = new URLSearchParams();
    for (const k of LIST) for (const v of q[k] || []) p.append(k, v);
    for (const k of ONE) if (q[k] && !(k === "sort" && q[k] === "id")) p.set(k, q[k]);
    if (q.desc) p.set("desc", "1");
    if (q.offset) p.set("offset", String(q.offset));
    if (q.limit) p.set("limit", String(q.limit));
    const keep = location.hash.startsWith("#gallery") ? "#gallery" : location.hash;   // the host page's own
    const url = inHash() ? location.pathname + location.search + (p.toString() ? "#gallery?" + p : keep)
      : location.pathname + (p.toString() ? "?" + p : "") + location.hash;
    if (url !== location.pathname + location.search + location.hash) history[push ? "pushState" : "replaceState"](null, "", url);
  }

  function fromPanel() {
    const f = $("mvp-gpanel"), q = {};
    for (const k of LIST) {
      const v = [...f.querySelectorAll(`input[name=${k}]:checked`)].map((i) => i.value);
      if (v.length) q[k] = v;
    }
    for (const k of ONE) { const el = f.elements[k]; if (el && el.value) q[k] = el.value; }
    if (f.elements.desc.checked) q.desc = true;
    return q;
  }

  function toPanel(q) {
    const f = $("mvp-gpanel");
    for (const k of LIST) for (const i of f.querySelectorAll(`input[name=${k}]`)) i.checked = (q[k] || []).includes(i.value);
    for (const k of ONE) { const el = f.elements[k]; if (el) el.value = q[k] || (k === "sort" ? "id" : ""); }
    f.elements.desc.checked = !!q.desc;
  }

  // ---- the grid ---------------------------------------------------------------------------------
  // `keep`: reload as many cards as are shown now (after a bulk action or a note), not one page
  async function load(push, keep) {
    const mine = ++seq;
    const limit = keep ? Math.min(MAX_LIMIT, Math.max(ids.length, query.limit || 48)) : query.limit;
    const data = await call("page", { query: limit ? { ...query, limit } : query });
    if (mine !== seq) return;            // a newer request is on its way: its answer wins
    ids = data.ids; total = data.total;
    $("mvp-ggrid").innerHTML = data.grid;
    count(data.by_status);
    toUrl(query, push);
    paintSelection();
    watchLast();
  }

  let byStatus = {};
  function count(st) {
    if (st) byStatus = st;
    const text = Object.entries(byStatus).filter(([, n]) => n).map(([s, n]) => `${s} ${n}`).join(" · ");
    const from = ids.length ? (query.offset || 0) + 1 : 0, to = (query.offset || 0) + ids.length;
    $("mvp-gcount").textContent = `${from}–${to} of ${total}` + (text ? ` (${text})` : "");
    $("mvp-gprev").hidden = !(query.offset > 0);
    $("mvp-gnext").disabled = to >= total;
    $("mvp-gnext").hidden = to >= total;
  }

  // the next page, appended: the URL keeps the first card's offset, so "n of total", a range and
  // "all that match" mean what they meant with pages
  async function more() {
    const from = (query.offset || 0) + ids.length;
    if (loadingMore || from >= total) return;
    loadingMore = true;
    const mine = seq;
    try {
      const data = await call("page", { query: { ...query, offset: from } });
      if (mine !== seq) return;          // the query changed meanwhile: that load wins
      if (data.ids.length) $("mvp-ggrid").insertAdjacentHTML("beforeend", data.grid);
      ids = ids.concat(data.ids); total = data.total;
      count(data.by_status);
      paintSelection();
    } finally { loadingMore = false; }
    watchLast();
  }

  function watchLast() {
    if (!("IntersectionObserver" in window)) return;     // the More button still works
    if (!observer) observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) run(more);
    }, { rootMargin: "0px 0px 600px 0px" });
    observer.disconnect();
    const all = cards();
    if (all.length && (query.offset || 0) + ids.length < total) observer.observe(all[all.length - 1]);
  }

  function setQuery(q, push) {
    query = q; allMatch = false; selected.clear(); lastIndex = null;
    return run(() => load(push));
  }

  function back() {
    const limit = query.limit || 48;
    query = { ...query, offset: Math.max(0, (query.offset || 0) - limit) };
    return run(() => load(true));
  }

  // ---- selection --------------------------------------------------------------------------------
  function cards() { return [...document.querySelectorAll("#mvp-ggrid .mvp-gcard")]; }

  function toggle(card, range) {
    const i = Number(card.dataset.index);
    allMatch = false;
    if (range && lastIndex !== null) {
      const [a, b] = [Math.min(lastIndex, i), Math.max(lastIndex, i)];
      for (const c of cards()) { const j = Number(c.dataset.index); if (j >= a && j <= b) selected.add(c.dataset.puzzleId); }
    } else if (selected.has(card.dataset.puzzleId)) selected.delete(card.dataset.puzzleId);
    else selected.add(card.dataset.puzzleId);
    lastIndex = i;
    paintSelection();
  }

  function paintSelection() {
    for (const c of cards()) {
      const on = allMatch || selected.has(c.dataset.puzzleId);
      c.setAttribute("aria-selected", on ? "true" : "false");
      c.querySelector(".mvp-gcheck").checked = on;
    }
    const n = allMatch ? total : selected.size;
    const bar = $("mvp-gbulk");
    bar.hidden = !(n && (can.judge || can.tag || can.requeue));
    $("mvp-gsel-n").textContent = allMatch ? `all ${total} that match` : `${n} selected`;
    $("mvp-gall").textContent = `Select all ${total} that match`;
    $("mvp-gall").hidden = allMatch || total <= n;
  }

  async function bulk(action) {
    const body = { action };
    if (action === "reject") {
      body.reason = $("mvp-greason").value.trim();
      if (!body.reason) { say("a bulk reject needs a reason: write it in the box first", "warn"); $("mvp-greason").focus(); return; }
    }
    if (action === "tag") {
      body.tag = $("mvp-gtag").value.trim();
      if (!body.tag) { say("write the tag first", "warn"); $("mvp-gtag").focus(); return; }
    }
    if (allMatch) { body.all = true; body.query = query; } else body.ids = [...selected];
    await run(async () => {
      const r = await call("bulk", body);
      selected.clear(); allMatch = false;
      await load(false, true);
      say(r.msg, "info", r.batch_id);
      if (action === "tag") refreshPanel();
    });
  }

  // ---- notes (tags and comments of one puzzle) --------------------------------------------------
  async function openNotes(pid) {
    const box = $("mvp-gdetail");
    box.dataset.puzzleId = pid;
    await run(async () => {
      const r = await call("notes", { puzzle_id: pid });
      $("mvp-gdetail-id").textContent = pid;
      $("mvp-gdetail-notes").innerHTML = r.html;
      box.hidden = false;
      $("mvp-gnote-tag").focus();
    });
  }

  async function note(action, extra) {
    const pid = $("mvp-gdetail").dataset.puzzleId;
    await run(async () => {
      const r = await call(action, { puzzle_id: pid, label: $("mvp-gnote-label").value.trim(), ...extra });
      $("mvp-gdetail-notes").innerHTML = r.html;
      await load(false, true);
    });
  }

  // ---- views ------------------------------------------------------------------------------------
  function showViews(views) {
    const sel = $("mvp-gviewlist");
    sel.replaceChildren(...views.map((v) => { const o = document.createElement("option"); o.value = o.textContent = v.name; return o; }));
  }

  async function openView(name) {
    const r = await call("view", { name });
    const q = Object.fromEntries(Object.entries(r.query).filter(([k, v]) => k !== "limit" && (Array.isArray(v) ? v.length : v)));
    toPanel(q);
    await setQuery(q, true);
  }

  async function refreshPanel() {
    const r = await call("init");
    $("mvp-gside").innerHTML = r.panel;
    toPanel(query);
    showViews(r.views);
  }

  // ---- wiring -----------------------------------------------------------------------------------
  function layout() {
    root().innerHTML = `
      <div class="mvp-gallery">
        <aside id="mvp-gside" class="mvp-gside"></aside>
        <section class="mvp-gmain">
          <div id="mvp-gmsg" aria-live="polite"></div>
          <div class="mvp-gbar"><span id="mvp-gcount"></span>
            <button type="button" class="mvp-btn" id="mvp-gprev" title="start a page earlier">← Earlier</button>
            <button type="button" class="mvp-btn mvp-gfilters" id="mvp-gtoggle" aria-controls="mvp-gside">Filters</button></div>
          <div id="mvp-gbulk" class="mvp-gbulk" hidden><b id="mvp-gsel-n"></b>
            <button type="button" class="mvp-btn" id="mvp-gall"></button>
            <button type="button" class="mvp-btn" id="mvp-gnone">Clear</button>
            <span class="mvp-gjudge"><button type="button" class="mvp-btn" id="mvp-gaccept">Accept</button>
            <input id="mvp-greason" placeholder="reason" maxlength="2000" aria-label="reason for a reject">
            <button type="button" class="mvp-btn" id="mvp-greject">Reject</button></span>
            <button type="button" class="mvp-btn" id="mvp-grequeue">Send back to the queue</button>
            <span class="mvp-gtagger"><input id="mvp-gtag" placeholder="tag" maxlength="40" aria-label="tag">
            <button type="button" class="mvp-btn" id="mvp-gdotag">Tag</button></span></div>
          <div id="mvp-ggrid" class="mvp-ggrid"></div>
          <div class="mvp-gmore"><button type="button" class="mvp-btn" id="mvp-gnext">More ↓</button></div>
          <div id="mvp-gdetail" class="mvp-gdetail" hidden><b>Notes on <code id="mvp-gdetail-id"></code></b>
            <div id="mvp-gdetail-notes"></div>
            <span class="mvp-gwrite"><label>on distractor <input id="mvp-gnote-label" maxlength="4" size="3" placeholder="(puzzle)"></label>
            <span class="mvp-gtagger"><input id="mvp-gnote-tag" placeholder="tag" maxlength="40" aria-label="add a tag">
            <button type="button" class="mvp-btn" id="mvp-gnote-addtag">Add tag</button></span>
            <textarea id="mvp-gnote-text" rows="2" maxlength="2000" placeholder="comment" aria-label="comment"></textarea>
            <button type="button" class="mvp-btn" id="mvp-gnote-comment">Comment</button></span>
            <button type="button" class="mvp-btn" id="mvp-gdetail-close">Close</button></div>
        </section>
      </div>`;
  }

  function bind() {
    const on = (id, fn) => { $(id).onclick = fn; };
    on("mvp-gprev", () => back());
    on("mvp-gnext", () => run(more));
    on("mvp-gtoggle", () => $("mvp-gside").classList.toggle("open"));
    on("mvp-gall", () => { allMatch = true; paintSelection(); });
    on("mvp-gnone", () => { allMatch = false; selected.clear(); paintSelection(); });
    on("mvp-gaccept", () => bulk("accept"));
    on("mvp-greject", () => bulk("reject"));
    on("mvp-grequeue", () => bulk("requeue"));
    on("mvp-gdotag", () => bulk("tag"));
    on("mvp-gdetail-close", () => { $("mvp-gdetail").hidden = true; });
    $("mvp-gdetail-notes").addEventListener("click", (e) => {
      const x = e.target.closest(".mvp-untag");
      if (x) { e.preventDefault(); note("untag", { tag: x.dataset.tag, label: x.dataset.label || "" }); }
    });
    on("mvp-gnote-addtag", () => note("tag", { tag: $("mvp-gnote-tag").value }));
    on("mvp-gnote-comment", () => note("comment", { text: $("mvp-gnote-text").value }).then(() => { $("mvp-gnote-text").value = ""; }));
    const side = $("mvp-gside");
    side.addEventListener("submit", (e) => { e.preventDefault(); side.classList.remove("open"); setQuery(fromPanel(), true); });
    side.addEventListener("click", (e) => {
      const t = e.target;
      if (t.id === "mvp-gclear") { toPanel({}); setQuery({}, true); }
      else if (t.id === "mvp-gviewopen" && $("mvp-gviewlist").value) run(() => openView($("mvp-gviewlist").value));
      else if (t.id === "mvp-gviewsave") run(async () => {
        const r = await call("save_view", { name: $("mvp-gviewname").value, query: fromPanel() });
        showViews(r.views); say(r.msg);
      });
      else if (t.id === "mvp-gviewdel" && $("mvp-gviewlist").value) run(async () => {
        const r = await call("delete_view", { name: $("mvp-gviewlist").value }); showViews(r.views); say(r.msg);
      });
    });
    const grid = $("mvp-ggrid");
    grid.addEventListener("click", (e) => {
      const check = e.target.closest(".mvp-gcheck");
      if (check) { toggle(check.closest(".mvp-gcard"), e.shiftKey); return; }
      const tag = e.target.closest(".mvp-tag");
      if (tag) { e.preventDefault(); const q = { tag: [tag.dataset.tag] }; toPanel(q); setQuery(q, true); return; }
      const c = e.target.closest(".mvp-gcomments, .mvp-gnotes");
      if (c) { e.preventDefault(); openNotes(c.closest(".mvp-gcard").dataset.puzzleId); return; }
      const link = e.target.closest(".mvp-gid");
      if (link && root().dataset.galleryOpen === "curate" && window.mvpCurateView) {
        e.preventDefault(); window.mvpCurateView.openPuzzle(link.closest(".mvp-gcard").dataset.puzzleId);
      }
    });
    grid.addEventListener("keydown", (e) => {
      const card = e.target.closest && e.target.closest(".mvp-gcard");
      if (!card || e.target !== card) return;
      if (e.key === "x" || e.key === "X" || e.key === " ") { e.preventDefault(); toggle(card, e.shiftKey); }
      else if (e.key === "Enter") { e.preventDefault(); const f = card.querySelector("figure[data-full]"); if (f) f.click(); }
      else if (e.key === "n") { e.preventDefault(); openNotes(card.dataset.puzzleId); }
      else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        const all = cards(), i = all.indexOf(card) + (e.key === "ArrowRight" ? 1 : -1);
        if (all[i]) { e.preventDefault(); all[i].focus(); }
      }
    });
    window.addEventListener("popstate", () => {
      if (inHash() && !location.hash.startsWith("#gallery")) return;     // the host page's own history
      query = fromUrl(); toPanel(query); setQuery(query);
    });
  }

  async function start() {
    if (started || !root()) return;
    started = true;
    layout();
    bind();
    await run(async () => {
      const r = await call("init");
      can = r.can;
      $("mvp-gside").innerHTML = r.panel;
      showViews(r.views);
      for (const [cls, ok] of [["mvp-gjudge", can.judge], ["mvp-gtagger", can.tag]])
        for (const el of document.querySelectorAll("#mvp-gbulk ." + cls)) el.hidden = !ok;
      $("mvp-grequeue").hidden = !can.requeue;
      for (const el of document.querySelectorAll("#mvp-gdetail .mvp-gwrite")) el.hidden = !can.tag;
      root().dataset.canTag = can.tag ? "1" : "";
      const view = params().get("view");
      if (view) { await openView(view); return; }
      query = fromUrl();
      toPanel(query);
      await load();
    });
  }

  // reload: the cards shown now, re-read (a host page changed what they show, e.g. the Data page's audit)
  window.mvpGallery = { start, reload: () => started && run(() => load(false, true)),
                        state: () => ({ query, ids: ids.slice(), total, selected: [...selected], allMatch }) };
  const eager = () => root() && root().dataset.galleryLazy !== "1";
  if (root()) { if (eager()) start(); }
  else {
    const obs = new MutationObserver(() => { if (root()) { obs.disconnect(); if (eager()) start(); } });
    obs.observe(document.documentElement, { childList: true, subtree: true });
  }
})();
