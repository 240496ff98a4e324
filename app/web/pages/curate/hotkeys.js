// Keyboard shortcuts for the curate page. A key calls the same function of app/web/pages/curate/curate.js that
// the page's button calls (window.mvpCurate), so a shortcut does exactly what the click does, and the
// server checks it the same way; the Gradio button is only pressed if that script is missing.
// Ignored while typing in a text box, with Ctrl/Alt/Meta held (browser shortcuts keep working), and
// while the page shows the gallery grid (app/web/pages/curate/view_switch.js).
(function () {
  "use strict";
  if (window.mvpHotkeysInstalled) return;
  window.mvpHotkeysInstalled = true;

  const KEYS = { a: "btn-accept", r: "btn-reject", s: "btn-skip", u: "btn-undo", p: "btn-play", Enter: "btn-answer",
                 ArrowLeft: "btn-prev", ArrowRight: "btn-next" };
  const CALLS = { a: (c) => c.verdict("accept"), r: (c) => c.verdict("reject"), s: (c) => c.verdict("skip"),
                  u: (c) => c.undo(), p: (c) => c.playPicks(), Enter: (c) => c.submitAnswer(),
                  Backspace: (c) => c.unpick(), ArrowLeft: (c) => c.move(-1), ArrowRight: (c) => c.move(1) };

  function typing(el) {
    if (!el) return false;
    const tag = (el.tagName || "").toLowerCase();
    if (tag === "textarea" || tag === "select" || el.isContentEditable) return true;
    if (tag !== "input") return false;
    const type = (el.type || "text").toLowerCase();
    return !["radio", "checkbox", "button", "submit", "range", "color", "file"].includes(type);
  }

  function press(id) {
    const el = document.getElementById(id);
    if (!el) return false;
    const btn = el.tagName === "BUTTON" ? el : el.querySelector("button");
    (btn || el).click();
    return true;
  }

  window.mvpToggleHelp = function () {
    const h = document.getElementById("mvp-help");
    if (h) h.hidden = !h.hidden;
  };

  function cycleReason() {
    const box = document.getElementById("mvp-reason");
    if (!box) return;
    const radios = Array.from(box.querySelectorAll("input[type=radio]"));
    if (!radios.length) return;
    const i = radios.findIndex((r) => r.checked);
    radios[(i + 1) % radios.length].click();
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    if (typing(e.target)) return;
    if (!document.getElementById("btn-accept")) return;      // not the curate page
    if (document.documentElement.classList.contains("mvp-mode-grid")) return;   // the gallery view: its own keys
    let handled = false;
    const digit = /^Digit([1-9])$/.exec(e.code || "");
    const C = window.mvpCurate;
    if (digit) {
      if (!C) return;
      if (e.shiftKey) C.play(Number(digit[1])); else C.digit(Number(digit[1]));
      handled = true;
    } else if (e.key === "?") {
      window.mvpToggleHelp(); handled = true;
    } else if (e.key === "Escape") {
      const h = document.getElementById("mvp-help"); if (h) h.hidden = true; handled = !!h;
    } else if (e.key === "c") {
      cycleReason(); handled = true;
    } else if (CALLS[e.key] && !e.shiftKey) {
      if (C) { CALLS[e.key](C); handled = true; } else handled = !!KEYS[e.key] && press(KEYS[e.key]);
    }
    if (handled) { e.preventDefault(); e.stopPropagation(); }
  }, true);
})();
