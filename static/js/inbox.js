/*
 * inbox.js — the reviewer pages.
 *
 * On /inbox/: listens on /ws/inbox/ and, on every notice, refetches the rows of the current
 * filter (`?partial=rows&...`, rendered and escaped by Django) and swaps the table body; keeps the
 * keyboard-selected row; updates the pending counters and the page title.
 * On /inbox/<id>/: a live preview of the argument changes ("amount: 500 → 450"), a warning when
 * someone else decides the request meanwhile, and the nav counter.
 * Both: countdowns (class "urgent" under 60 s) and document.body.dataset.wsState.
 *
 * Text from the socket is only ever set with textContent.
 */
(function () {
  "use strict";

  const rowsBody = document.getElementById("approval-rows");
  const detail = document.getElementById("approval-detail");

  /* ------------------------------------------------------------------ helpers */

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function displayValue(v) {
    if (v === undefined) return "(none)";
    if (v === null) return "null";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function readJSONScript(id) {
    const node = document.getElementById(id);
    if (!node) return undefined;
    try {
      return JSON.parse(node.textContent);
    } catch (e) {
      return undefined;
    }
  }

  function formatRemaining(ms) {
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + String(s % 60).padStart(2, "0") + " s";
    const h = Math.floor(m / 60);
    if (h < 48) return h + " h " + String(m % 60).padStart(2, "0") + " min";
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const node of document.querySelectorAll(".countdown[data-expires]")) {
      const iso = node.dataset.expires;
      const t = iso ? Date.parse(iso) : NaN;
      if (!Number.isFinite(t)) continue;
      const left = t - now;
      node.textContent = left > 0 ? (node.dataset.prefix || "") + formatRemaining(left) : "expired";
      node.classList.toggle("urgent", left > 0 && left < 60000);
      node.classList.toggle("expired", left <= 0);
      node.setAttribute("aria-label", left > 0 ? "expires in " + formatRemaining(left) : "expired");
    }
  }

  function setPendingCount(n) {
    if (!Number.isFinite(n) || n < 0) return;
    const nav = document.getElementById("nav-inbox-count");
    if (nav) {
      nav.textContent = n ? String(n) : "";
      nav.hidden = !n;
      nav.setAttribute("aria-label", n + " pending");
    }
    const counter = document.getElementById("pending-count");
    if (counter) counter.textContent = String(n);
    if (rowsBody) document.title = (n ? "(" + n + ") " : "") + "Inbox · agui-inbox";
  }

  function rowsUrl(search) {
    const params = new URLSearchParams(search);
    params.delete("partial");
    params.set("partial", "rows");
    return "/inbox/?" + params.toString();
  }

  async function fetchRows(search) {
    const res = await fetch(rowsUrl(search), {
      credentials: "same-origin",
      headers: { Accept: "text/html", "X-Requested-With": "XMLHttpRequest" },
      cache: "no-store",
    });
    // A redirect means the session ended (login page): leave the page as it is.
    if (!res.ok || res.redirected) throw new Error("HTTP " + res.status);
    const count = parseInt(res.headers.get("X-Pending-Count") || "", 10);
    const html = await res.text();
    return { count, html };
  }

  /* ------------------------------------------------------------------ inbox list */

  let selectedId = null;
  let knownIds = null;

  function rows() {
    return rowsBody ? Array.from(rowsBody.querySelectorAll("tr[data-approval-id]")) : [];
  }

  function selectRow(row, focus) {
    for (const r of rows()) {
      r.classList.toggle("selected", r === row);
      if (r === row) r.setAttribute("aria-selected", "true");
      else r.removeAttribute("aria-selected");
    }
    selectedId = row ? row.dataset.approvalId : null;
    if (row && focus) {
      const link = row.querySelector("a.row-link") || row;
      link.focus();
      row.scrollIntoView({ block: "nearest" });
    }
  }

  /* Swap the table body for the server-rendered rows (Django-escaped markup from our own origin,
     parsed inertly with DOMParser: scripts in it never run). */
  function replaceRows(html) {
    const hadFocus = rowsBody.contains(document.activeElement);
    const doc = new DOMParser().parseFromString("<table><tbody>" + html + "</tbody></table>", "text/html");
    const fresh = doc.querySelector("tbody");
    const newRows = Array.from(fresh.children).map((node) => document.importNode(node, true));
    const before = knownIds || new Set(rows().map((r) => r.dataset.approvalId));
    rowsBody.replaceChildren(...newRows);
    const ids = new Set();
    for (const r of rows()) {
      ids.add(r.dataset.approvalId);
      if (!before.has(r.dataset.approvalId)) r.classList.add("row-new");
    }
    knownIds = ids;
    const keep = selectedId ? rows().find((r) => r.dataset.approvalId === selectedId) : null;
    if (keep) selectRow(keep, hadFocus);
    else {
      selectedId = null;
      if (hadFocus && rows().length) selectRow(rows()[0], true);
    }
    tickCountdowns();
  }

  let inflight = false;
  let again = false;
  async function refreshRows() {
    if (inflight) {
      again = true;
      return;
    }
    inflight = true;
    try {
      do {
        again = false;
        const { count, html } = await fetchRows(location.search);
        replaceRows(html);
        setPendingCount(count);
      } while (again);
    } catch (e) {
      console.warn("Inbox refresh failed:", e.message);
    } finally {
      inflight = false;
    }
  }

  if (rowsBody) {
    knownIds = new Set(rows().map((r) => r.dataset.approvalId));

    rowsBody.addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-approval-id]");
      if (row) selectRow(row, false);
    });
    rowsBody.addEventListener("focusin", (event) => {
      const row = event.target.closest("tr[data-approval-id]");
      if (row && row.dataset.approvalId !== selectedId) selectRow(row, false);
    });

    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const target = event.target;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      const list = rows();
      if (!list.length) return;
      const index = list.findIndex((r) => r.dataset.approvalId === selectedId);
      if (event.key === "j" || event.key === "ArrowDown") {
        event.preventDefault();
        selectRow(list[Math.min(list.length - 1, index + 1)], true);
      } else if (event.key === "k" || event.key === "ArrowUp") {
        event.preventDefault();
        selectRow(list[Math.max(0, index < 0 ? 0 : index - 1)], true);
      } else if ((event.key === "Enter" || event.key === "o") && index >= 0 && !(target && target.closest && target.closest("a,button"))) {
        const link = list[index].querySelector("a.row-link");
        if (link) {
          event.preventDefault();
          window.location.assign(link.href);
        }
      }
    });

    const initial = parseInt((document.getElementById("pending-count") || {}).textContent || "", 10);
    setPendingCount(initial);
  }

  /* ------------------------------------------------------------------ detail page */

  const original = readJSONScript("approval-arguments") || {};

  function currentValue(input) {
    const kind = input.dataset.kind;
    const raw = input.value;
    if (kind === "number" || kind === "integer") {
      if (raw.trim() === "") return { value: undefined };
      const n = Number(raw);
      return Number.isFinite(n) ? { value: n } : { value: raw, invalid: true };
    }
    if (kind === "boolean") return { value: raw === "true" };
    if (kind === "json") {
      if (raw.trim() === "") return { value: undefined };
      try {
        return { value: JSON.parse(raw) };
      } catch (e) {
        return { value: raw, invalid: true };
      }
    }
    return { value: raw };
  }

  function sameValue(before, after, kind) {
    if (before === undefined || before === null) return after === undefined || after === "" || after === null;
    if ((kind === "number" || kind === "integer") && typeof after === "number") {
      const b = Number(before);
      return Number.isFinite(b) && b === after;
    }
    if (kind === "boolean") return String(before).toLowerCase() === String(after);
    if (kind === "enum" || kind === "string") return String(before) === String(after);
    return JSON.stringify(before) === JSON.stringify(after);
  }

  function diffItem(name, before, after, invalid) {
    const li = el("li");
    li.appendChild(el("code", null, name));
    li.appendChild(document.createTextNode(": "));
    li.appendChild(el("del", null, displayValue(before)));
    li.appendChild(document.createTextNode(" → "));
    li.appendChild(el("ins", invalid ? "text-danger" : null, invalid ? displayValue(after) + " (invalid)" : displayValue(after)));
    return li;
  }

  const form = document.getElementById("decide-form");
  const preview = document.getElementById("diff-preview");
  if (form && preview) {
    const inputs = Array.from(form.querySelectorAll("[data-arg]"));
    const initial = new Map(inputs.map((input) => [input, input.value]));
    const updatePreview = () => {
      const items = [];
      for (const input of inputs) {
        const name = input.dataset.arg;
        const { value, invalid } = currentValue(input);
        // An argument the agent left out shows its default: untouched, it is no change.
        if (!(name in original) && input.value === initial.get(input)) continue;
        if (!invalid && sameValue(original[name], value, input.dataset.kind)) continue;
        items.push(diffItem(name, original[name], value, invalid));
      }
      if (items.length) preview.replaceChildren(...items);
      else preview.replaceChildren(el("li", "muted", "No changes: approving runs the call as requested."));
    };
    form.addEventListener("input", updatePreview);
    form.addEventListener("change", updatePreview);
    updatePreview();

    // Rejecting needs feedback: say so before the round trip.
    form.addEventListener("submit", (event) => {
      const submitter = event.submitter;
      const feedback = document.getElementById("feedback");
      if (submitter && submitter.value === "reject" && feedback && !feedback.value.trim()) {
        event.preventDefault();
        let error = document.getElementById("feedback-error");
        if (!error) {
          error = el("p", "field-error");
          error.id = "feedback-error";
          feedback.insertAdjacentElement("afterend", error);
        }
        error.textContent = "Tell the agent why you reject this request.";
        feedback.setAttribute("aria-invalid", "true");
        feedback.setAttribute("aria-describedby", "feedback-error");
        feedback.focus();
      }
    });
  }

  // Decided requests: show what changed between the requested and approved arguments.
  const finalDiff = document.getElementById("final-diff");
  const finalArgs = readJSONScript("approval-final-arguments");
  if (finalDiff && finalArgs && typeof finalArgs === "object") {
    const pre = document.getElementById("final-arguments");
    if (pre) pre.textContent = JSON.stringify(finalArgs, null, 2);
    const keys = Array.from(new Set([...Object.keys(original), ...Object.keys(finalArgs)]));
    const items = keys
      .filter((k) => JSON.stringify(original[k]) !== JSON.stringify(finalArgs[k]))
      .map((k) => diffItem(k, original[k], finalArgs[k], false));
    if (items.length) finalDiff.replaceChildren(...items);
    else finalDiff.replaceChildren(el("li", "muted", "As requested (no edits)."));
  }

  function onDetailNotice(notice) {
    const approval = notice.approval || {};
    if (String(approval.id) !== detail.dataset.approvalId) return;
    if (notice.type === "approval.requested" || approval.status === detail.dataset.status) return;
    const live = document.getElementById("detail-live");
    if (!live) return;
    const status = approval.status || (notice.type === "approval.expired" ? "expired" : "decided");
    live.textContent = "This request is now " + status + ". Reload the page to see the outcome.";
    live.hidden = false;
    if (form) for (const button of form.querySelectorAll("button[type=submit]")) button.disabled = true;
  }

  let countInflight = false;
  async function refreshCount() {
    if (countInflight || !document.getElementById("nav-inbox-count")) return;
    countInflight = true;
    try {
      const { count } = await fetchRows("?status=pending");
      setPendingCount(count);
    } catch (e) {
      /* the counter is a nicety */
    } finally {
      countInflight = false;
    }
  }

  /* ------------------------------------------------------------------ socket */

  let attempt = 0;
  let timer = null;
  let current = null;

  function setWsState(value) {
    document.body.dataset.wsState = value;
    const status = document.getElementById("conn-status");
    if (status) {
      status.textContent = value === "open" ? "Live" : value === "connecting" ? "Connecting…" : "Reconnecting…";
      status.dataset.state = value;
    }
  }

  function onNotice(notice) {
    if (!notice || typeof notice !== "object") return;
    if (rowsBody) {
      refreshRows();
      const live = document.getElementById("inbox-live");
      const approval = notice.approval || {};
      if (live && notice.type === "approval.requested") {
        live.textContent = "New request: " + (approval.description || approval.tool_name || "");
      }
    } else {
      refreshCount();
    }
    if (detail) onDetailNotice(notice);
  }

  function connect() {
    clearTimeout(timer);
    timer = null;
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/inbox/");
    current = ws;
    window.aguiInbox = { ws };
    if (document.body.dataset.wsState !== "open") setWsState("connecting");
    ws.addEventListener("open", () => {
      attempt = 0;
      setWsState("open");
      // Anything may have changed while we were away.
      if (rowsBody) refreshRows();
      else refreshCount();
    });
    ws.addEventListener("message", (msg) => {
      let data;
      try {
        data = JSON.parse(msg.data);
      } catch (e) {
        return;
      }
      for (const notice of Array.isArray(data) ? data : [data]) onNotice(notice);
    });
    ws.addEventListener("close", () => {
      if (current !== ws) return;
      setWsState("closed");
      const base = Math.min(8000, 500 * Math.pow(2, attempt));
      attempt += 1;
      timer = setTimeout(connect, base / 2 + Math.random() * (base / 2));
    });
  }

  tickCountdowns();
  setInterval(tickCountdowns, 1000);
  if (rowsBody || detail) connect();
  else document.body.dataset.wsState = "closed";
})();
