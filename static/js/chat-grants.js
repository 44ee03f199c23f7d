/*
 * chat-grants.js — the "always allowed in this thread" bar above the composer.
 *
 * A grant is made by approving one's own request with "Always allow … in this thread" (chat.js
 * sends always_allow_in_thread and fires "agui:grants-changed"); from then on the approval engine
 * runs that tool without asking in this thread. The bar lists the grants in force
 * (GET /api/grants/?thread=<id>&active=true) and revokes them (POST /api/grants/<id>/revoke/).
 */
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)

  const bar = document.getElementById("grants");
  const configEl = document.getElementById("chat-config");
  const config = configEl ? JSON.parse(configEl.textContent || "{}") || {} : {};
  if (!bar || !config.threadId) return;
  const threadId = String(config.threadId);

  function csrf() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return node;
  }

  function render(grants, error) {
    const items = grants.map((g) => {
      const revoke = el("button", { type: "button", class: "btn btn-small btn-quiet", "aria-label": fmt(gettext("Revoke: always allow %(tool)s"), { tool: g.tool_name }), text: gettext("Revoke") });
      revoke.addEventListener("click", async () => {
        revoke.disabled = true;
        try {
          const res = await window.aguiFetch("/api/grants/" + encodeURIComponent(g.id) + "/revoke/", {
            method: "POST", credentials: "same-origin",
            headers: { Accept: "application/json", "X-CSRFToken": csrf() },
          });
          if (!res.ok && res.status !== 409) throw new Error(window.aguiStatus(res));
          await refresh();
        } catch (e) {
          revoke.disabled = false;
          render(grants, fmt(gettext("Could not revoke: %(error)s"), { error: e.message }));
        }
      });
      return el("li", { class: "grant", "data-grant-id": g.id }, el("code", { text: g.tool_name }), " ", revoke);
    });
    const parts = [
      el("span", { class: "grants-label", text: gettext("Always allowed in this chat:") }),
      el("ul", { class: "grant-list" }, ...items),
    ];
    if (error) parts.push(el("span", { class: "field-error", role: "alert", text: error }));
    bar.replaceChildren(...parts);
    bar.hidden = !grants.length && !error;
  }

  async function refresh() {
    try {
      const res = await window.aguiFetch("/api/grants/?active=true&thread=" + encodeURIComponent(threadId), {
        credentials: "same-origin", headers: { Accept: "application/json" },
      });
      if (!res.ok) return; // e.g. an older server without grants: show nothing
      const data = await res.json();
      render(Array.isArray(data) ? data : data.results || []);
    } catch (e) {
      /* offline: the socket's reconnect will bring us back; keep what is shown */
    }
  }

  document.addEventListener("agui:grants-changed", refresh);
  refresh();
})();
