// Frames at full size, on every page (docs/web.md, "Frames at full size"). A frame opens large when
// it is clicked or tapped in a container marked `data-lightbox` (a filmstrip, a gallery card's
// strip; not the frames in the gap: there a tap takes a pick back), or when a card's zoom button (.mvp-zoom) is pressed (an option card itself picks the
// option, so it does not open anything). In the lightbox: arrows or a swipe move through the
// container's frames, Escape closes. Opened on a candidate (an option of a puzzle), the frames
// around the gap stand on each side of it, and "Compare" (c) shows two candidates side by side, each
// between those frames; the arrows then change the second one.
// Hand-written because it is ~150 lines: no library to vet, load and keep under the page's CSP.
(function () {
  "use strict";
  if (window.mvpLightbox) return;
  let box = null, items = [], at = 0, other = -1, around = null, touchX = null;

  const frameOf = (fig) => ({ src: fig.dataset.full, caption: fig.dataset.label ? "option " + fig.dataset.label
    : ((fig.querySelector("figcaption") || {}).textContent || "") });

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function figure(it, cls) {
    const f = el("figure", cls);
    const img = el("img");
    img.src = it.src; img.alt = it.caption || "";
    f.append(img, el("figcaption", "", it.caption || ""));
    return f;
  }

  function row(i) {
    const r = el("div", "mvp-lb-row");
    if (around && around.before) r.append(figure({ src: around.before, caption: "before the gap" }, "mvp-lb-ctx"));
    r.append(figure(items[i], "mvp-lb-main"));
    if (around && around.after) r.append(figure({ src: around.after, caption: "after the gap" }, "mvp-lb-ctx"));
    return r;
  }

  function draw() {
    const stage = box.querySelector(".mvp-lb-stage");
    stage.replaceChildren(row(at));
    if (other >= 0) stage.append(row(other));
    stage.dataset.compare = other >= 0 ? "1" : "0";
    box.querySelector(".mvp-lb-count").textContent = other >= 0
      ? `${items[at].caption} beside ${items[other].caption}` : `${at + 1} / ${items.length}`;
    box.querySelector(".mvp-lb-compare").hidden = !around || items.length < 2;
  }

  function build() {
    box = el("div", "mvp-lightbox");
    box.id = "mvp-lightbox";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.setAttribute("aria-label", "frame at full size");
    const bar = el("div", "mvp-lb-bar");
    const btn = (cls, text, fn) => { const b = el("button", "mvp-btn " + cls, text); b.type = "button"; b.onclick = fn; return b; };
    bar.append(btn("mvp-lb-prev", "←", () => move(-1)), el("span", "mvp-lb-count"),
               btn("mvp-lb-next", "→", () => move(1)), btn("mvp-lb-compare", "Compare (c)", toggleCompare),
               btn("mvp-lb-close", "Close (Esc)", close));
    box.append(bar, el("div", "mvp-lb-stage"));
    box.addEventListener("click", (e) => { if (e.target === box) close(); });
    box.addEventListener("touchstart", (e) => { touchX = e.changedTouches[0].clientX; }, { passive: true });
    box.addEventListener("touchend", (e) => {
      if (touchX === null) return;
      const dx = e.changedTouches[0].clientX - touchX;
      touchX = null;
      if (Math.abs(dx) > 40) move(dx < 0 ? 1 : -1);
    });
    document.body.append(box);
  }

  function open(list, index, ctx) {
    if (!list.length) return;
    if (!box) build();
    items = list; at = Math.max(0, Math.min(index, list.length - 1)); other = -1; around = ctx || null;
    box.hidden = false;
    draw();
    box.querySelector(".mvp-lb-close").focus();
  }

  function close() { if (box) box.hidden = true; }
  const isOpen = () => !!box && !box.hidden;

  function move(step) {
    const n = items.length;
    if (other >= 0) {
      do { other = (other + step + n) % n; } while (other === at && n > 1);
    } else {
      at = (at + step + n) % n;
    }
    draw();
  }

  function toggleCompare() {
    if (!around || items.length < 2) return;
    other = other >= 0 ? -1 : (at + 1) % items.length;
    draw();
  }

  // The frames on each side of a puzzle's gap, for a candidate opened from its option pool.
  function gapNeighbours(fig) {
    const root = fig.closest("#mvp-puzzle, .mvp-gcard");
    const gap = root && root.querySelector(".mvp-gap, .mvp-ggap");
    if (!gap) return null;
    const prev = gap.previousElementSibling, next = gap.nextElementSibling;
    const src = (f) => (f && f.dataset && f.dataset.full) || null;
    return { before: src(prev), after: src(next) };
  }

  document.addEventListener("click", (e) => {
    if (!e.target.closest) return;
    const zoom = e.target.closest(".mvp-zoom");
    if (zoom) {
      e.preventDefault(); e.stopPropagation();
      const fig = zoom.closest("figure[data-full]");
      const pool = [...fig.parentElement.querySelectorAll(":scope > figure[data-full]")];
      open(pool.map(frameOf), pool.indexOf(fig), gapNeighbours(fig));
      return;
    }
    // a strip's own frames only: a frame inside the gap is the curator's pick, which a tap takes back
    const fig = e.target.closest("[data-lightbox] > figure[data-full]");
    if (fig) {
      e.preventDefault();
      const all = [...fig.parentElement.querySelectorAll(":scope > figure[data-full]")];
      open(all.map(frameOf), all.indexOf(fig), null);
    }
  }, true);

  // While open, the lightbox has the keyboard: the page's own keys (the curate hotkeys) wait.
  window.addEventListener("keydown", (e) => {
    if (!isOpen()) return;
    const keys = { ArrowLeft: () => move(-1), ArrowRight: () => move(1), Escape: close, c: toggleCompare };
    const fn = keys[e.key];
    if (fn) { e.preventDefault(); fn(); }
    if (e.key !== "Tab") e.stopPropagation();
  }, true);

  window.mvpLightbox = { open, close, isOpen, move, compare: toggleCompare };
})();
