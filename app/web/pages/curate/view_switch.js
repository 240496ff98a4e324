// The Curate page's two views (app/web/pages/curate/page.py): one puzzle at a time, or the gallery grid
// to act in bulk (app/web/pages/gallery/gallery.js on this page's #mvp-gallery, its query after #gallery
// in the address). "#gallery" in the address opens the grid, so a reload or a link keeps it; the
// buttons or g switch; a card's id opens that puzzle in the one-puzzle view (window.mvpCurate.open).
(function () {
  "use strict";
  if (window.mvpCurateView) return;
  const html = document.documentElement;
  const isGrid = () => html.classList.contains("mvp-mode-grid");
  const wantsGrid = () => location.hash.startsWith("#gallery");

  function set(grid, push) {
    html.classList.toggle("mvp-mode-grid", grid);
    for (const [id, on] of [["mvp-view-one", !grid], ["mvp-view-grid", grid]]) {
      const b = document.getElementById(id);
      if (b) b.setAttribute("aria-pressed", on ? "true" : "false");
    }
    const url = location.pathname + location.search + (grid ? (wantsGrid() ? location.hash : "#gallery") : "");
    if (url !== location.pathname + location.search + location.hash) history[push ? "pushState" : "replaceState"](null, "", url);
    if (grid && window.mvpGallery) window.mvpGallery.start();
  }

  function openPuzzle(pid) {
    set(false, true);
    if (window.mvpCurate) window.mvpCurate.open(pid);
    window.scrollTo(0, 0);
  }

  document.addEventListener("click", (e) => {
    if (!e.target.closest) return;
    if (e.target.closest("#mvp-view-one")) set(false, true);
    else if (e.target.closest("#mvp-view-grid")) set(true, true);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "g" || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
    const t = e.target, tag = ((t && t.tagName) || "").toLowerCase();
    if (tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
    if (tag === "input" && !["checkbox", "radio", "button", "submit"].includes((t.type || "text").toLowerCase())) return;
    if (!document.getElementById("mvp-gallery")) return;
    e.preventDefault();
    set(!isGrid(), true);
  });
  window.addEventListener("popstate", () => { if (wantsGrid() !== isGrid()) set(wantsGrid(), false); });

  window.mvpCurateView = { set, openPuzzle, grid: isGrid };
  // Gradio draws the page after this script runs: take the address's view once the mount exists
  const ready = () => document.getElementById("mvp-gallery") && document.getElementById("mvp-view-grid");
  if (ready()) set(wantsGrid(), false);
  else {
    const obs = new MutationObserver(() => { if (ready()) { obs.disconnect(); set(wantsGrid(), false); } });
    obs.observe(document.documentElement, { childList: true, subtree: true });
  }
})();
