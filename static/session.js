// Every page's answer to an ended session (expired, logged out elsewhere, revoked by an admin): the
// server answers an API call or a Gradio event 401 with a JSON line; this script turns any 401 from
// this server into the login page, which brings the tab back to the same place afterwards
// (/login?next=<this page>), instead of error notices and "Error" badges on every panel
// (docs/web.md, "Login and sessions"). A page that must keep something typed meanwhile (the
// curate page's verdict) stores it before it sends it.
(function () {
  "use strict";
  if (window.mvpSession) return;
  const send = window.fetch.bind(window);
  let leaving = false;

  function toLogin() {
    if (leaving) return;
    leaving = true;
    const here = location.pathname + location.search;
    location.assign("/login?next=" + encodeURIComponent(here));
  }

  function ours(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  window.fetch = async function (input, init) {
    const r = await send(input, init);
    if (r.status === 401 && ours(r.url)) {
      toLogin();
      return new Promise(() => {});     // the caller never sees the refusal: the tab is leaving
    }
    return r;
  };
  window.mvpSession = { toLogin };
})();
