/*
 * nav-count.js — the reviewer's Inbox badge (requests waiting for my groups), live on every page.
 *
 * window.aguiPendingCount(n) sets the badge, and the title's "(n)" on the pages whose title carries
 * it (the badge's data-in-title). The inbox pages (inbox.js) count on their own socket; any other
 * page a reviewer has open (chat, stats, audit, policies, mail settings) listens on /ws/inbox/ here
 * and asks /inbox/summary/ again on each notice, so its badge does not stay at the count it loaded with.
 * Each notice is also given to the page's other scripts as a document event, "agui:notice".
 */
(function () {
  "use strict";

  let baseTitle = null;

  function setPendingCount(n) {
    const badge = document.getElementById("nav-inbox-count");
    if (!badge || !Number.isFinite(n) || n < 0) return;
    badge.textContent = n ? String(n) : "";
    badge.hidden = !n;
    badge.setAttribute("aria-label", interpolate(ngettext("%(count)s pending", "%(count)s pending", n), { count: n }, true));
    if (!badge.hasAttribute("data-in-title")) return;
    if (baseTitle === null) baseTitle = document.title.replace(/^\(\d+\)\s*/, "");
    document.title = (n ? "(" + n + ") " : "") + baseTitle;
  }
  window.aguiPendingCount = setPendingCount;

  const refresh = window.aguiOneAtATime(async () => {
    // the badge is a nicety: a failure waits for the next notice or reconnection
    const res = await window.aguiFetch("/inbox/summary/", { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" });
    if (res.ok && !res.redirected) setPendingCount((await res.json()).waiting);
  }); // notices during a fetch (a bulk decision sends many) make one more, not one each

  let attempt = 0;
  let current = null;

  function connect() {
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/inbox/");
    current = ws;
    // gone quiet without closing (net.js): a new socket at once, which asks the count again
    const alive = window.aguiKeepAlive(ws, () => {
      if (current !== ws) return;
      document.body.dataset.noticeSocket = "closed";
      attempt = 0;
      connect();
    });
    ws.addEventListener("open", () => {
      document.body.dataset.noticeSocket = "open"; // for tests, as the chat says its own socket's (wsState)
      refresh(); // anything may have changed while we were away
    });
    ws.addEventListener("message", (event) => {
      attempt = 0;
      alive.heard();
      let notice = null;
      try {
        notice = JSON.parse(event.data);
      } catch (e) {
        /* not a notice: the count is asked again all the same */
      }
      if (notice && notice.type === "pong") return; // the keep-alive's answer
      // other scripts of the page follow what concerns them (policy-live.js: policy.changed)
      if (notice && typeof notice === "object") document.dispatchEvent(new CustomEvent("agui:notice", { detail: notice }));
      if (!notice || notice.type !== "policy.changed") refresh();
    });
    ws.addEventListener("close", (event) => {
      if (current !== ws) return; // given up on as dead: its successor is open already
      document.body.dataset.noticeSocket = "closed";
      if (event.code === 4401 || event.code === 4403) return; // signed out, or reviews nothing now
      const base = Math.min(8000, 500 * Math.pow(2, attempt));
      attempt += 1;
      setTimeout(connect, base / 2 + Math.random() * (base / 2));
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const inboxPage = document.getElementById("approval-rows") || document.getElementById("approval-detail");
    if (document.getElementById("nav-inbox-count") && !inboxPage) connect();
  });
})();
