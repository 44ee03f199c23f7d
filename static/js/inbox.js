/*
 * inbox.js — the reviewer pages.
 *
 * /inbox/ (the list): listens on /ws/inbox/ and, on every notice, refetches the rows of the current
 * filters and page (`?partial=rows&...`, rendered and escaped by Django) and swaps the table body,
 * keeping the keyboard-selected row, the ticked checkboxes and the focus (a selected request that left
 * the list stays in the reading pane with its outcome; no other becomes the target of a / r until the
 * reviewer moves with j / k or a click). Bulk and single decisions
 * (checkboxes, a / r) go through a confirmation dialog and POST /inbox/bulk/. Keys: j k x a r e o / ?
 *
 * /inbox/<id>/ (the detail): the arguments editor (schema-editor.js) with a JSON fallback, the
 * diff of the edits (old → new) next to the buttons, server errors next to their fields, keys
 * a r e ? /, and live panels (quorum, decisions, audit) refreshed when this request changes.
 *
 * Both: countdowns (amber when a third of the time is left, red near the deadline), the title
 * badge and nav counter (requests waiting for my groups), an optional browser notification for a
 * new request that waits for me, and document.body.dataset.wsState.
 *
 * Triage: at desktop width the list has a reading pane (the selected request, `?partial=preview`);
 * a decision is held by the server for AGUI_UNDO_SECONDS (an Undo toast, key u) and the next
 * request is selected. One confirmation rule for buttons and keys (needsConfirm). Presence: the
 * page tells the socket which request it shows ({"type": "viewing"}) and shows who else has it open.
 * The request page follows its request live: once decided elsewhere it shows the outcome.
 *
 * Keys: every single-key shortcut is off when the reviewer switched them off on /settings/ (the keys
 * dialog's data-single-keys; WCAG 2.1.4). For screen readers: a page reached by a decision (?held=)
 * focuses its heading and says the Undo toast's words in #inbox-live; the arguments' diff is said in
 * #diff-live once the typing settles; the reading pane is not a live region (the row's link says it).
 *
 * Text from the socket or the rows is only ever set with textContent.
 */
(function () {
  "use strict";

  const rowsBody = document.getElementById("approval-rows");
  let detail = document.getElementById("approval-detail"); // swapped when the request changes
  const LIST_KEY = "agui.inbox.list";
  const NOTIFY_KEY = "agui.inbox.notify";
  const state = { notices: [], notified: [] };
  window.aguiInbox = state;
  let currentWs = null; // the inbox socket
  let viewingId = null; // the request this page shows (presence)
  const viewers = new Map(); // a tab's key -> username, for viewingId
  // the reviewer's setting (/settings/, Profile.inbox_keys): off, no single key acts on these pages
  // (WCAG 2.1.4: a speech-input user's stray word, letters typed with the focus on the page)
  const singleKeys = (document.getElementById("keys-dialog") || { dataset: {} }).dataset.singleKeys !== "off";
  // a touch screen without a keyboard (a phone): the keys still work with one, but no sentence names them
  const touchOnly = window.matchMedia("(hover: none) and (pointer: coarse)").matches;
  const keyWords = singleKeys && !touchOnly;

  /* ------------------------------------------------------------------ helpers */

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) window.aguiVisible.set(node, String(text)); // bidi controls shown, not obeyed
    return node;
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

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* Keys belong to the control when one takes text (not to a checkbox, radio or button). */
  function typing(target) {
    if (!target) return false;
    if (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName)) return true;
    return target.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset)$/.test(target.type);
  }

  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)
  const RISK_WORDS = { low: gettext("low"), medium: gettext("medium"), high: gettext("high"), critical: gettext("critical") };
  const riskWord = (risk) => RISK_WORDS[risk] || risk;

  function formatRemaining(ms) {
    const s = Math.floor(ms / 1000);
    if (s < 60) return fmt(gettext("%(seconds)s s"), { seconds: s });
    const m = Math.floor(s / 60);
    if (m < 60) return fmt(gettext("%(minutes)s min %(seconds)s s"), { minutes: m, seconds: String(s % 60).padStart(2, "0") });
    const h = Math.floor(m / 60);
    if (h < 48) return fmt(gettext("%(hours)s h %(minutes)s min"), { hours: h, minutes: String(m % 60).padStart(2, "0") });
    return fmt(gettext("%(days)s d %(hours)s h"), { days: Math.floor(h / 24), hours: h % 24 });
  }

  /* Urgent (red) under a minute or a sixth of the allowed time; soon (amber) under a third. */
  function tickCountdowns() {
    const now = Date.now();
    for (const node of document.querySelectorAll(".countdown[data-expires]")) {
      const t = node.dataset.expires ? Date.parse(node.dataset.expires) : NaN;
      if (!Number.isFinite(t)) continue;
      const created = node.dataset.created ? Date.parse(node.dataset.created) : NaN;
      const total = Number.isFinite(created) && t > created ? t - created : null;
      const left = t - now;
      // data-format names the sentence around the time left: "expires in 3 min", "in 4 s"
      const SENTENCES = { expires: gettext("expires in %(left)s"), in: gettext("in %(left)s") };
      const sentence = (left) => (SENTENCES[node.dataset.format] ? fmt(SENTENCES[node.dataset.format], { left }) : left);
      node.textContent = left > 0 ? sentence(formatRemaining(left)) : node.dataset.done || gettext("expired");
      const urgent = left > 0 && (left < 60000 || (total && left < total / 6));
      node.classList.toggle("urgent", Boolean(urgent));
      node.classList.toggle("soon", Boolean(left > 0 && !urgent && total && left < total / 3));
      node.classList.toggle("expired", left <= 0);
      if (!node.dataset.done) node.setAttribute("aria-label", left > 0 ? fmt(gettext("expires in %(left)s"), { left: formatRemaining(left) }) : gettext("expired"));
    }
  }

  function setPendingCount(n) {
    if (!Number.isFinite(n) || n < 0) return;
    if (window.aguiPendingCount) window.aguiPendingCount(n); // the nav badge and the title's "(n)" (nav-count.js)
    const counter = document.getElementById("pending-count");
    if (counter) counter.textContent = String(n);
    document.body.dataset.waiting = String(n);
  }

  function announce(text) {
    const live = document.getElementById("inbox-live");
    if (live) live.textContent = text;
  }

  /* One rule for every way of approving (button, key, pane): ask first for several at once, for
     edited arguments and for high or critical risk; otherwise decide at once (Undo follows). */
  function needsConfirm(risk, edits, count) {
    return count > 1 || edits > 0 || risk === "high" || risk === "critical";
  }

  /* ---- the Undo toast: the server holds the decision until the window closes */

  let undoTimer = null;

  function showUndo(heldIds, text, dueMs, what) {
    let toast = document.getElementById("undo-toast");
    if (!toast) {
      toast = el("div", "undo-toast");
      toast.id = "undo-toast";
      toast.setAttribute("role", "status");
      toast.setAttribute("aria-live", "polite");
      toast.appendChild(el("span", "undo-text"));
      const formEl = el("form", "undo-form");
      formEl.id = "undo-form";
      formEl.method = "post";
      formEl.action = "/inbox/undo/";
      const input = el("input");
      input.type = "hidden";
      input.name = "held";
      formEl.appendChild(input);
      const button = el("button", "btn btn-small", gettext("Undo") + " ");
      button.type = "submit";
      button.id = "undo-button";
      if (singleKeys) button.appendChild(el("kbd", null, "u"));
      formEl.appendChild(button);
      toast.appendChild(formEl);
      document.body.appendChild(toast);
      bindUndo(toast);
    }
    toast.hidden = false;
    toast.dataset.held = heldIds.join(",");
    toast.dataset.due = new Date(dueMs).toISOString();
    toast.dataset.what = heldIds.length === 1 ? what || "" : ""; // which request a "Not sent" is about
    delete toast.dataset.request; // the list's: no request page is this one's
    toast.querySelector("input[name=held]").value = heldIds.join(",");
    toast.querySelector(".undo-text").textContent = text;
    toast.querySelector("button").disabled = false;
    toast.querySelector("form").hidden = false;
    toast.querySelector(".undo-error")?.remove();
    armUndo(toast);
  }

  function armUndo(toast) {
    clearTimeout(undoTimer);
    const left = Date.parse(toast.dataset.due) - Date.now();
    undoTimer = setTimeout(() => awaitSent(toast), Math.max(0, left));
  }

  /* The window closed: the server sends each held decision, or finds someone else decided first, and
     says which (approval.sent / approval.not_sent, by held id). Until it has, nothing is claimed; a
     page that hears nothing (its socket away) lets the toast go without a word. */
  const SENT_WAIT_MS = 20000;
  let sending = null;

  function awaitSent(toast) {
    const ids = (toast.dataset.held || "").split(",").filter(Boolean);
    sending = { ids: new Set(ids), total: ids.length, firsts: [] };
    toast.querySelector("form").hidden = true;
    toast.querySelector(".undo-text").textContent = gettext("Sending…");
    undoTimer = setTimeout(() => {
      toast.hidden = true;
      sending = null;
      forgetSentDrafts();
    }, SENT_WAIT_MS);
  }

  function notSent({ by, withdrew }, what) {
    if (by && withdrew) {
      return what ? fmt(gettext("Not sent: %(who)s withdrew “%(what)s” before it was sent."), { who: by, what })
        : fmt(gettext("Not sent: %(who)s withdrew this request before it was sent."), { who: by });
    }
    if (by) {
      return what ? fmt(gettext("Not sent: %(who)s decided “%(what)s” first."), { who: by, what })
        : fmt(gettext("Not sent: %(who)s decided this request first."), { who: by });
    }
    return what ? fmt(gettext("Not sent: “%(what)s” was closed before your decision could be sent."), { what })
      : gettext("Not sent: the request was closed before your decision could be sent.");
  }

  function onHeldOutcome(notice) {
    const toast = document.getElementById("undo-toast");
    if (!sending && toast && !toast.hidden && (toast.dataset.held || "").split(",").includes(String(notice.held))) {
      // the server's window closed first: it counts from each hold, this page from its answer (later,
      // the more so for many at once), and an outcome heard before the page waited for it was lost
      clearTimeout(undoTimer);
      awaitSent(toast);
    }
    if (!sending || !sending.ids.delete(String(notice.held))) return;
    // a request its requester withdrew meanwhile was not "decided" by them (it reads as a self-approval)
    if (notice.type === "approval.not_sent") {
      sending.firsts.push({ by: notice.by || "", withdrew: (notice.approval || {}).status === "cancelled" });
    }
    if (sending.ids.size) return;
    clearTimeout(undoTimer);
    const { firsts, total } = sending;
    sending = null;
    forgetSentDrafts(); // no Undo now: what was typed for them went (or cannot go) with the decisions
    if (!firsts.length) {
      if (toast) toast.hidden = true;
      announce(gettext("Sent."));
      return;
    }
    // "this request" only on that request's own page: on the next one's (where a decision leads) or
    // the list, the toast names the request it is about
    const what = toast && !(detail && toast.dataset.request === detail.dataset.approvalId) ? toast.dataset.what : "";
    const text = total > 1
      ? fmt(ngettext("%(count)s of %(total)s decisions was not sent: someone else decided first.",
        "%(count)s of %(total)s decisions were not sent: someone else decided first.", firsts.length),
      { count: firsts.length, total })
      : notSent(firsts[0], what);
    if (toast) {
      toast.querySelector(".undo-text").textContent = text;
      toast.hidden = false;
    }
    const line = document.getElementById("decided-line"); // the next request's page: it named the decision
    if (line && total === 1) {
      line.className = "banner banner-warn decided-line";
      window.aguiVisible.set(line.querySelector(".decided-what"), text);
    }
    announce(text);
  }

  function bindUndo(toast) {
    const formEl = toast.querySelector("form");
    formEl.addEventListener("submit", async (event) => {
      if (!rowsBody) return; // the request page: a plain POST, back to the recalled request
      event.preventDefault();
      const body = new FormData(formEl);
      if (!body.get("csrfmiddlewaretoken")) body.append("csrfmiddlewaretoken", csrfToken());
      toast.querySelector("button").disabled = true;
      try {
        const res = await window.aguiFetch("/inbox/undo/", {
          method: "POST", body, credentials: "same-origin",
          headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "XMLHttpRequest", Accept: "application/json" },
        });
        const data = await window.aguiJSON(res); // an error page says so in a sentence, not the parser's words
        if (!res.ok) throw new Error(data.message || window.aguiStatus(res)); // not "too late": nothing was undone
        clearTimeout(undoTimer);
        toast.hidden = true;
        if (data.recalled && data.recalled.length) {
          selectedId = data.recalled[0];
          showResult(gettext("Undone: nothing was sent."), []);
          await refreshRows();
        } else showResult(gettext("Too late to undo: the decision has been sent."), []);
      } catch (e) { // not undone: the toast says why (its role=status reads it out), Undo stays
        toast.querySelector("button").disabled = false;
        let why = toast.querySelector(".undo-error");
        if (!why) {
          why = el("span", "undo-error");
          toast.appendChild(why);
        }
        window.aguiVisible.set(why, " " + e.message);
      }
    });
  }

  function undoKey() {
    const toast = document.getElementById("undo-toast");
    if (!toast || toast.hidden) return false;
    toast.querySelector("form").requestSubmit();
    return true;
  }

  {
    const toast = document.getElementById("undo-toast");
    if (toast) {
      bindUndo(toast);
      armUndo(toast);
    }
  }

  /* ------------------------------------------------------------------ notifications */

  const notifyToggle = document.getElementById("notify-toggle");

  function notificationsOn() {
    return "Notification" in window && Notification.permission === "granted" && localStorage.getItem(NOTIFY_KEY) === "1";
  }

  if (notifyToggle && "Notification" in window) {
    notifyToggle.closest("label").hidden = false;
    notifyToggle.checked = notificationsOn();
    notifyToggle.addEventListener("change", async () => {
      if (!notifyToggle.checked) {
        localStorage.removeItem(NOTIFY_KEY);
        return;
      }
      let permission = Notification.permission;
      if (permission === "default") permission = await Notification.requestPermission();
      if (permission === "granted") {
        // one now, so that a browser that cannot show them from a page (Android's Chrome throws "Illegal
        // constructor") says so at once rather than staying silent when a request comes
        try {
          new Notification(gettext("Notifications are on"), {
            body: gettext("New requests for you show here while this page is open."), tag: "agui-notify-on" });
          localStorage.setItem(NOTIFY_KEY, "1");
        } catch (e) {
          cannotNotify();
        }
      } else {
        notifyToggle.checked = false;
        announce(gettext("The browser does not allow notifications for this site."));
      }
    });
  }

  function cannotNotify() {
    localStorage.removeItem(NOTIFY_KEY);
    if (!notifyToggle) return;
    notifyToggle.checked = false;
    notifyToggle.disabled = true;
    const label = notifyToggle.closest("label");
    let note = document.getElementById("notify-note");
    if (!note) {
      note = el("span", "notify-note muted");
      note.id = "notify-note";
      label.insertAdjacentElement("afterend", note);
    }
    const text = gettext("This browser cannot show notifications from a web page (Android phones cannot): Mail settings can send you new requests instead.");
    note.textContent = text;
    announce(text);
  }

  function notifyNew(approval) {
    // in this page's language when the request was said in every language (our own tools')
    const said = approval.descriptions || {};
    const description = window.aguiVisible.text(said[document.documentElement.lang] || approval.description || "");
    const text = fmt(gettext("%(tool)s: %(description)s"), { tool: approval.tool_name || gettext("request"), description });
    announce(fmt(gettext("New request for you: %(request)s"), { request: text }));
    if (!notificationsOn()) return;
    try {
      const n = new Notification(gettext("New request waiting for you"), { body: text, tag: "approval-" + approval.id });
      n.onclick = () => {
        window.focus();
        window.location.assign("/inbox/" + encodeURIComponent(approval.id) + "/");
      };
      state.notified.push(approval.id);
    } catch (e) {
      cannotNotify(); // said, and switched off: not silently nothing
    }
  }

  async function refreshSummary(newId) {
    const url = "/inbox/summary/" + (newId ? "?id=" + encodeURIComponent(newId) : "");
    const res = await window.aguiFetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" });
    if (!res.ok || res.redirected) throw new Error(window.aguiStatus(res));
    const data = await res.json();
    setPendingCount(data.waiting);
    return data;
  }

  /* ------------------------------------------------------------------ inbox list */

  let selectedId = null;
  let knownIds = null;
  // the request the reviewer was reading when it left the list (decided or moved elsewhere): the
  // pane keeps showing what became of it and no other request becomes the keys' target unasked;
  // j / k go on from where it stood, a click chooses another
  let gone = null; // {id, index}
  const checked = new Set();

  function rows() {
    return rowsBody ? Array.from(rowsBody.querySelectorAll("tr[data-approval-id]")) : [];
  }

  function rowById(id) {
    return rows().find((r) => r.dataset.approvalId === id) || null;
  }

  function selectRow(row, focus) {
    for (const r of rows()) {
      r.classList.toggle("selected", r === row);
      if (r === row) r.setAttribute("aria-selected", "true");
      else r.removeAttribute("aria-selected");
    }
    selectedId = row ? row.dataset.approvalId : null;
    if (row) gone = null;
    if (row && focus) {
      const link = row.querySelector("a.row-link") || row;
      link.focus();
      row.scrollIntoView({ block: "nearest" });
    }
    schedulePreview();
  }

  /* ---- the reading pane (desktop width): the selected request beside the list */

  const pane = document.getElementById("reading-pane");
  const splitQuery = window.matchMedia("(min-width: 1200px)");
  let previewTimer = null;
  let previewShown = null;
  let previewSeq = 0;

  function splitOn() {
    return Boolean(pane) && splitQuery.matches;
  }

  function applySplit() {
    if (!pane) return;
    const on = splitOn();
    pane.hidden = !on;
    document.getElementById("triage").classList.toggle("split", on);
    if (on) schedulePreview();
    else viewing(null);
  }

  function schedulePreview() {
    if (!splitOn()) return;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => loadPreview(false), 80); // j held down: only where it stops
  }

  async function loadPreview(force) {
    if (!splitOn()) return;
    const id = selectedId || (gone && gone.id);
    if (!id) {
      previewShown = null;
      viewing(null);
      pane.replaceChildren(el("p", "muted reading-pane-empty",
        !rows().length ? gettext("Nothing to read here.") : keyWords
          ? gettext("Select a request (click it, or j / k) to read it here.") : gettext("Select a request to read it here.")));
      return;
    }
    if (id === previewShown && !force) return;
    const seq = ++previewSeq;
    let res;
    try {
      res = await window.aguiFetch("/inbox/" + encodeURIComponent(id) + "/?partial=preview", {
        credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" },
      });
    } catch (e) { // out of reach: the pane says so; selecting it again (or a notice) tries again
      if (seq === previewSeq) {
        previewShown = null;
        pane.replaceChildren(el("p", "muted reading-pane-empty", e.message));
      }
      return;
    }
    if (seq !== previewSeq || !res.ok || res.redirected) return;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const article = doc.getElementById("preview");
    if (!article) return;
    pane.replaceChildren(document.importNode(article, true));
    previewShown = id;
    viewing(id);
    renderViewers();
    tickCountdowns();
  }

  if (pane) {
    pane.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-decide]");
      if (!button) return;
      event.preventDefault();
      const preview = pane.querySelector("#preview");
      if (preview) decideFromList([preview.dataset.approvalId], button.dataset.decide);
    });
  }

  function updateBulkBar() {
    const count = document.getElementById("bulk-count");
    if (!count) return;
    count.textContent = fmt(ngettext("%(count)s selected", "%(count)s selected", checked.size), { count: checked.size });
    const bar = document.getElementById("bulk-bar");
    bar.classList.toggle("has-selection", checked.size > 0);
    bar.hidden = !rowsBody.querySelector(".row-check");  // nothing here this reviewer can decide
    const all = document.getElementById("select-all");
    const boxes = rows().map((r) => r.querySelector(".row-check")).filter(Boolean);
    if (all) {
      all.hidden = bar.hidden;
      all.checked = boxes.length > 0 && boxes.every((b) => b.checked);
      all.indeterminate = !all.checked && boxes.some((b) => b.checked);
    }
  }

  function applyChecks() {
    const present = new Set();
    for (const r of rows()) {
      const box = r.querySelector(".row-check");
      if (!box) continue;
      present.add(box.value);
      box.checked = checked.has(box.value);
      r.classList.toggle("checked", box.checked);
    }
    for (const id of Array.from(checked)) if (!present.has(id)) checked.delete(id);
    updateBulkBar();
  }

  /* Swap the table body for the server-rendered rows (Django-escaped markup from our own origin,
     parsed inertly with DOMParser: scripts in it never run). */
  function replaceRows(html) {
    const place = readingPlace();
    const hadFocus = rowsBody.contains(document.activeElement);
    const focusedCheck = hadFocus && document.activeElement.classList.contains("row-check");
    const doc = new DOMParser().parseFromString("<table><tbody>" + html + "</tbody></table>", "text/html");
    const fresh = doc.querySelector("tbody");
    const newRows = Array.from(fresh.children).map((node) => document.importNode(node, true));
    const before = knownIds || new Set(rows().map((r) => r.dataset.approvalId));
    const wasAt = selectedId ? rows().findIndex((r) => r.dataset.approvalId === selectedId) : -1;
    rowsBody.replaceChildren(...newRows);
    const ids = new Set();
    for (const r of rows()) {
      ids.add(r.dataset.approvalId);
      if (!before.has(r.dataset.approvalId)) r.classList.add("row-new");
    }
    knownIds = ids;
    applyChecks();
    keepPlace(place);
    const keep = selectedId ? rowById(selectedId) : null;
    if (keep) {
      selectRow(keep, false);
      if (hadFocus) (focusedCheck && keep.querySelector(".row-check") || keep.querySelector("a.row-link") || keep).focus();
    } else {
      // Nothing else is selected in its place: a key pressed next (a, r) must not fall on a
      // request the reviewer never opened. The pane shows what became of it (decided by whom).
      if (selectedId && !gone) {
        gone = { id: selectedId, index: Math.max(0, wasAt) };
        announce(keyWords ? gettext("The request you were reading has left the list; j or k to go on.")
          : gettext("The request you were reading has left the list."));
      }
      selectedId = null;
      for (const r of rows()) {
        r.classList.remove("selected");
        r.removeAttribute("aria-selected");
      }
      // what had the focus left with its row (the last one too): the list's heading holds it, not the
      // page's body, where a screen reader starts the page over; j / k go on from where the row stood
      if (hadFocus && !rowsBody.contains(document.activeElement)) {
        const title = document.getElementById("inbox-title");
        if (title) title.focus({ preventScroll: true });
      }
      loadPreview(true);
    }
    tickCountdowns();
  }

  /* A reader scrolled down the list keeps their place when requests come in above (newest first): the
     row at the top of the window stays where it was, not two cards further down under the finger.
     (Safari has no scroll anchoring, and a swapped table body leaves Chromium's nothing to hold.) */
  function readingPlace() {
    if (window.scrollY <= 0) return null; // at the top: the new requests are what the reader sees next
    const row = rows().find((r) => r.getBoundingClientRect().bottom > 0);
    return row ? { id: row.dataset.approvalId, top: row.getBoundingClientRect().top } : null;
  }

  function keepPlace(place) {
    const row = place && rowById(place.id);
    if (!row) return;
    const moved = row.getBoundingClientRect().top - place.top;
    if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
  }

  function rowsUrl() {
    const params = new URLSearchParams(location.search);
    params.set("partial", "rows");
    return "/inbox/?" + params.toString();
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
        const res = await window.aguiFetch(rowsUrl(), {
          credentials: "same-origin",
          headers: { Accept: "text/html", "X-Requested-With": "XMLHttpRequest" },
          cache: "no-store",
        });
        // A redirect means the session ended (login page): leave the page as it is.
        if (!res.ok || res.redirected) throw new Error("HTTP " + res.status);
        const html = await res.text();
        replaceRows(html);
        setPendingCount(parseInt(res.headers.get("X-Pending-Count") || "", 10));
        const total = document.getElementById("result-count");
        if (total && res.headers.get("X-Result-Count")) total.textContent = res.headers.get("X-Result-Count");
      } while (again);
    } catch (e) {
      console.warn("Inbox refresh failed:", e.message);
    } finally {
      inflight = false;
    }
  }

  /* ---- the decision dialog (single row or the ticked ones) */

  const dialog = document.getElementById("decide-dialog");
  let pending = null; // {ids, decision} while the list's dialog is open

  function openListDialog(ids, decision) {
    if (!dialog || !ids.length) return;
    pending = { ids, decision };
    const approve = decision === "approve";
    const n = ids.length;
    document.getElementById("decide-dialog-title").textContent =
      approve ? (n === 1 ? gettext("Approve this request?") : fmt(ngettext("Approve %(count)s request?", "Approve %(count)s requests?", n), { count: n }))
        : (n === 1 ? gettext("Reject this request?") : fmt(ngettext("Reject %(count)s request?", "Reject %(count)s requests?", n), { count: n }));
    const list = document.getElementById("decide-dialog-list");
    const items = [];
    let risky = 0;
    for (const id of ids) {
      const row = rowById(id);
      if (!row) continue;
      if (row.dataset.risk === "high" || row.dataset.risk === "critical") risky += 1;
      const li = el("li");
      li.appendChild(el("code", null, row.dataset.tool || ""));
      li.appendChild(document.createTextNode(" "));
      const link = row.querySelector("a.row-link");
      li.appendChild(el("span", null, link ? link.textContent : id));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(el("span", "badge risk risk-" + row.dataset.risk, riskWord(row.dataset.risk)));
      items.push(li);
    }
    list.replaceChildren(...items);
    const warning = document.getElementById("decide-dialog-warning");
    warning.hidden = !(approve && risky);
    warning.textContent = risky ? fmt(ngettext("%(risky)s of these is high or critical risk.", "%(risky)s of these are high or critical risk.", risky), { risky }) : "";
    if (n === 1 && risky) warning.textContent = fmt(gettext("This request is %(risk)s risk."), { risk: riskWord(rowById(ids[0]).dataset.risk) });
    const reasonField = document.getElementById("decide-dialog-reason-field");
    const reason = document.getElementById("decide-dialog-reason");
    reasonField.hidden = approve;
    const bulkFeedback = document.getElementById("bulk-feedback");
    reason.value = !approve && bulkFeedback ? bulkFeedback.value : "";
    const error = document.getElementById("decide-dialog-error");
    error.hidden = true;
    reason.removeAttribute("aria-invalid");
    const confirm = document.getElementById("decide-dialog-confirm");
    confirm.textContent = n > 1 ? fmt(approve ? gettext("Approve %(count)s") : gettext("Reject %(count)s"), { count: n })
      : approve ? gettext("Approve") : gettext("Reject");
    confirm.className = "btn " + (approve ? "btn-primary" : "btn-danger-solid");
    confirm.disabled = false;
    document.getElementById("decide-dialog-hint").textContent = approve
      ? gettext("Enter approves; Esc cancels.")
      : n > 1 ? gettext("One reason for all of them; Ctrl+Enter rejects, Esc cancels.")
        : gettext("Ctrl+Enter rejects, Esc cancels.");
    dialog.showModal();
    (approve ? confirm : reason).focus();
  }

  async function postDecision(ids, decision, feedback) {
    const body = new FormData();
    for (const id of ids) body.append("ids", id);
    body.append("decision", decision);
    body.append("feedback", feedback);
    const res = await window.aguiFetch("/inbox/bulk/", {
      method: "POST",
      body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "XMLHttpRequest", Accept: "application/json" },
    });
    let data = {};
    try {
      data = await window.aguiJSON(res);
    } catch (e) {
      if (res.ok) throw e; // the sign-in page (a lapsed session) or an error page: decided nothing
    }
    // the server's sentence for people, else one for its status (a proxy's 502 has no JSON)
    if (!res.ok) throw new Error(data.message || window.aguiStatus(res));
    return data;
  }

  function showResult(text, failures) {
    let box = document.getElementById("decide-result");
    if (!box) {
      box = el("div", "banner");
      box.id = "decide-result";
      box.setAttribute("role", "status");
      const meta = document.querySelector(".result-meta");
      meta.parentNode.insertBefore(box, meta.nextSibling);
    }
    box.className = "banner " + (failures.length ? "banner-warn" : "banner-ok");
    const lines = [el("span", null, text)];
    if (failures.length) {
      const ul = el("ul", "result-failures");
      for (const f of failures) ul.appendChild(el("li", null, f.id.slice(0, 8) + ": " + f.message));
      lines.push(ul);
    }
    box.replaceChildren(...lines);
  }

  /* Decide from the list (a key, the pane's buttons, the dialog): the server holds the decision for
     the undo window; the rows leave the list at once and the next request is selected. */
  async function sendDecision(ids, decision, feedback) {
    const list = rows();
    const firstIndex = Math.min(...ids.map((id) => list.findIndex((r) => r.dataset.approvalId === id)).filter((i) => i >= 0));
    const data = await postDecision(ids, decision, feedback);
    const results = data.results || [];
    const failures = results.filter((r) => !r.ok);
    const done = results.filter((r) => r.ok).map((r) => r.id);
    for (const id of done) checked.delete(id);
    // the next request down (else the one above), as Gmail does after archiving
    const after = list.filter((r) => !done.includes(r.dataset.approvalId));
    const next = after.length ? after[Math.min(Number.isFinite(firstIndex) ? firstIndex : 0, after.length - 1)] : null;
    for (const id of done) {
      const row = rowById(id);
      if (row) row.remove();
    }
    knownIds = new Set(rows().map((r) => r.dataset.approvalId));
    applyChecks();
    if (next) selectRow(next, true);
    else {
      selectedId = null;
      await refreshRows();  // inbox zero, or what else the filters hold
      loadPreview(true);
    }
    const approved = decision === "approve";
    const verb = approved ? gettext("Approved") : gettext("Rejected");
    const what = done.length === 1 ? (list.find((r) => r.dataset.approvalId === done[0]).querySelector("a.row-link") || {}).textContent
      : fmt(ngettext("%(count)s request", "%(count)s requests", done.length), { count: done.length });
    if (data.held && data.held.length) {
      showUndo(data.held, fmt(gettext("%(what)s: %(why)s"), { what: verb, why: (what || "").slice(0, 90) }), Date.now() + (data.undo_seconds || 5) * 1000,
        (what || "").slice(0, 90));
    }
    const doneWords = fmt(approved ? ngettext("%(count)s approved", "%(count)s approved", done.length)
      : ngettext("%(count)s rejected", "%(count)s rejected", done.length), { count: done.length });
    if (failures.length) showResult(fmt(ngettext("%(done)s%(count)s not:", "%(done)s%(count)s not:", failures.length), { done: done.length ? doneWords + ", " : "", count: failures.length }), failures);
    else {
      const box = document.getElementById("decide-result");
      if (box) box.remove();
    }
    announce(data.held && data.held.length && keyWords ? fmt(gettext("%(done)s; Undo with u."), { done: doneWords }) : doneWords + ".");
  }

  function decideFromList(ids, decision) {
    if (!ids.length) return;
    const risk = ids.length === 1 && rowById(ids[0]) ? rowById(ids[0]).dataset.risk : "";
    if (decision === "approve" && !needsConfirm(risk, 0, ids.length)) {
      sendDecision(ids, decision, "").catch((e) => showResult(e.message, []));
    } else openListDialog(ids, decision);
  }

  if (dialog && rowsBody) {
    const form = document.getElementById("decide-dialog-form");
    const reason = document.getElementById("decide-dialog-reason");
    document.getElementById("decide-dialog-cancel").addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      pending = null;
      const row = selectedId && rowById(selectedId);
      if (row) (row.querySelector("a.row-link") || row).focus();
    });
    reason.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!pending) return;
      const { ids, decision } = pending;
      const feedback = decision === "reject" ? reason.value.trim() : "";
      const error = document.getElementById("decide-dialog-error");
      if (decision === "reject" && !feedback) {
        error.textContent = gettext("Give a reason: the agent sees it.");
        error.hidden = false;
        reason.setAttribute("aria-invalid", "true");
        reason.setAttribute("aria-describedby", "decide-dialog-error");
        reason.focus();
        return;
      }
      const confirm = document.getElementById("decide-dialog-confirm");
      const label = confirm.textContent;
      confirm.disabled = true;
      confirm.textContent = decision === "approve" ? gettext("Approving…") : gettext("Rejecting…"); // on its way
      try {
        await sendDecision(ids, decision, feedback);
        const bulkFeedback = document.getElementById("bulk-feedback");
        if (bulkFeedback && decision === "reject") bulkFeedback.value = "";
        dialog.close();
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
        confirm.disabled = false;
        confirm.textContent = label;
      }
    });
  }

  if (rowsBody) {
    knownIds = new Set(rows().map((r) => r.dataset.approvalId));
    try {
      sessionStorage.setItem(LIST_KEY, location.pathname + location.search);
    } catch (e) {
      /* private mode */
    }

    rowsBody.addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-approval-id]");
      if (!row) return;
      // a click on the row reads it in the pane beside the list; its link (or Enter, o) opens its page
      selectRow(row, false);
    });
    rowsBody.addEventListener("focusin", (event) => {
      const row = event.target.closest("tr[data-approval-id]");
      if (row && row.dataset.approvalId !== selectedId) selectRow(row, false);
    });
    rowsBody.addEventListener("change", (event) => {
      const box = event.target.closest(".row-check");
      if (!box) return;
      if (box.checked) checked.add(box.value);
      else checked.delete(box.value);
      box.closest("tr").classList.toggle("checked", box.checked);
      updateBulkBar();
    });
    const all = document.getElementById("select-all");
    if (all) {
      all.addEventListener("change", () => {
        for (const r of rows()) {
          const box = r.querySelector(".row-check");
          if (!box) continue;
          if (all.checked) checked.add(box.value);
          else checked.delete(box.value);
        }
        applyChecks();
      });
    }
    const bulkForm = document.getElementById("bulk-form");
    bulkForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const decision = event.submitter ? event.submitter.value : "approve";
      if (!checked.size) {
        showResult(gettext("Select requests first (the boxes on the left, or x)."), []);
        return;
      }
      decideFromList(Array.from(checked), decision);
    });

    // Filters apply as soon as they change; the search box on Enter.
    const filterForm = document.getElementById("filter-form");
    if (filterForm) {
      // Short, shareable URLs: only what differs from the defaults ("waiting for my groups").
      const defaults = { scope: "mine", status: "pending" };
      filterForm.addEventListener("submit", (event) => {
        event.preventDefault();
        const params = new URLSearchParams();
        for (const [name, value] of new FormData(filterForm)) {
          const v = String(value).trim();
          if (v && defaults[name] !== v) params.append(name, v);
        }
        const query = params.toString();
        window.location.assign("/inbox/" + (query ? "?" + query : ""));
      });
      filterForm.addEventListener("change", (event) => {
        if (event.target.tagName === "SELECT") filterForm.requestSubmit();
      });
      const search = document.getElementById("search");
      if (touchOnly) search.placeholder = gettext("description, arguments or thread"); // not its key, "( / )"
      search.addEventListener("keydown", (event) => {
        if (event.key === "Escape") search.blur();
      });
    }

    document.addEventListener("keydown", (event) => {
      if (!singleKeys || event.altKey || event.ctrlKey || event.metaKey) return;
      if (document.querySelector("dialog[open]")) return;
      if (typing(event.target)) return;
      if (event.key === "/") {
        event.preventDefault();
        const filtersBox = document.getElementById("filters-box");
        if (filtersBox) filtersBox.open = true;
        const search = document.getElementById("search");
        search.focus();
        search.select();
        return;
      }
      if (event.key === "?") {
        event.preventDefault();
        document.getElementById("keys-dialog").showModal();
        return;
      }
      if (event.key === "u") {
        if (undoKey()) event.preventDefault();
        return;
      }
      const list = rows();
      if ((event.key === "a" || event.key === "r") && gone && !selectedId && !checked.size) {
        // the request read last left the list: no other one takes its place as the target
        event.preventDefault();
        showResult(gettext("The request you were reading has left the list (decided or moved elsewhere): the pane shows what became of it. Choose another with j / k or a click."), []);
        return;
      }
      if (!list.length) return;
      const index = list.findIndex((r) => r.dataset.approvalId === selectedId);
      const row = index >= 0 ? list[index] : null;
      const onControl = event.target && event.target.closest && event.target.closest("a,button,input");
      if (event.key === "j" || event.key === "ArrowDown") {
        event.preventDefault();
        // after a request that left the list: the one now in its place (the next one down)
        const to = index < 0 && gone ? Math.min(list.length - 1, gone.index) : Math.min(list.length - 1, index + 1);
        selectRow(list[to], true);
      } else if (event.key === "k" || event.key === "ArrowUp") {
        event.preventDefault();
        const to = index < 0 && gone ? Math.max(0, gone.index - 1) : Math.max(0, index < 0 ? 0 : index - 1);
        selectRow(list[to], true);
      } else if ((event.key === "Enter" || event.key === "o") && row && !(event.key === "Enter" && onControl)) {
        event.preventDefault();
        window.location.assign(row.querySelector("a.row-link").href);
      } else if (event.key === "e" && row) {
        event.preventDefault();
        window.location.assign(row.querySelector("a.row-link").href + "#edit");
      } else if (event.key === "x" && row) {
        const box = row.querySelector(".row-check");
        if (box) {
          event.preventDefault();
          box.checked = !box.checked;
          box.dispatchEvent(new Event("change", { bubbles: true }));
        }
      } else if (event.key === "a" || event.key === "r") {
        const decision = event.key === "a" ? "approve" : "reject";
        let ids = Array.from(checked);
        if (!ids.length && row && row.dataset.canDecide) ids = [row.dataset.approvalId];
        if (decision === "approve" && !checked.size && row && row.dataset.requesterOff) {
          // its call cannot run for an account switched off: say so, not an approval dialog
          event.preventDefault();
          showResult(fmt(gettext("%(name)s's account is switched off: reject only."), { name: row.dataset.requesterOff }), []);
        } else if (ids.length) {
          event.preventDefault();
          decideFromList(ids, decision);
        } else if (row) {
          showResult(gettext("You cannot decide this request."), []);
        }
      }
    });

    // on a phone the filters fold away: the requests come first
    const filtersBox = document.getElementById("filters-box");
    if (filtersBox && window.matchMedia("(max-width: 720px)").matches && location.hash !== "#search") filtersBox.open = false;
    if (location.hash === "#search") document.getElementById("search").focus();
    if (splitQuery.addEventListener) splitQuery.addEventListener("change", applySplit);
    applySplit();
    applyChecks();
    setPendingCount(parseInt((document.getElementById("pending-count") || {}).textContent || "", 10));
  }

  /* ------------------------------------------------------------------ detail page */

  const form = document.getElementById("decide-form");
  const preview = document.getElementById("diff-preview");
  const requested = readJSONScript("approval-arguments") || {};
  const current = readJSONScript("approval-current") || requested;
  let editor = null;
  let jsonMode = false;
  let rawProblem = "";

  const labels = readJSONScript("approval-labels") || {}; // our own tools' labels, in the page's language

  function diffItems(changes) {
    return changes.map((c) => {
      const li = el("li");
      li.dataset.path = c.path;
      li.appendChild(el("span", "diff-field", window.SchemaEditor.nameOf(c.segments || c.path, labels)));
      li.appendChild(document.createTextNode(": "));
      li.appendChild(el("del", null, window.SchemaEditor.display(c.before)));
      li.appendChild(document.createTextNode(" → "));
      li.appendChild(el("ins", null, window.SchemaEditor.display(c.after)));
      return li;
    });
  }

  function draftValue() {
    if (jsonMode || !editor) {
      const raw = document.getElementById("arguments-json").value;
      try {
        const v = JSON.parse(raw);
        return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
      } catch (e) {
        return undefined;
      }
    }
    return editor.value();
  }

  function updateDecision() {
    if (!form || !preview) return;
    const approve = document.getElementById("approve");
    const draft = draftValue();
    const problems = editor && !jsonMode ? editor.problems() : new Map();
    const blocked = draft === undefined || problems.size > 0;
    const changes = draft === undefined ? [] : window.SchemaEditor.diff(current, draft);
    if (blocked) {
      preview.replaceChildren(el("li", "text-danger",
        draft === undefined ? gettext("The JSON is not a valid object: fix it or switch back to the form.")
                            : fmt(gettext("Fix the marked arguments first (%(fields)s)."), {
                              fields: Array.from(problems.keys()).map((k) => window.SchemaEditor.nameOf(k, labels)).join(", ") })));
    } else if (changes.length) preview.replaceChildren(...diffItems(changes));
    else preview.replaceChildren(el("li", "muted", gettext("No changes: approving runs the call as requested.")));
    form.dataset.changes = String(changes.length);
    if (blocked) showRefusal("");
    else askRefusal();
    sayDiffLater();
    document.getElementById("reset-edits").disabled = changes.length === 0;
    if (!approve) return; // this tool's policy offers no approval (e.g. reject or respond only)
    if (form.getAttribute("aria-busy") === "true") return; // on its way: it says "Approving…" and waits
    approve.disabled = blocked;
    approve.textContent = changes.length && !blocked
      ? fmt(ngettext("Approve with edits (%(count)s change)", "Approve with edits (%(count)s changes)", changes.length), { count: changes.length })
      : gettext("Approve");
    approve.classList.toggle("with-edits", changes.length > 0);
  }

  /* What the tool says it will refuse of the arguments in the editor (the same account on both sides
     of a transfer): its own sentence, asked of the server as they change and shown under the changes
     before anyone clicks. An edit it refuses is refused when approved; the arguments as asked are not. */
  const askRefusal = window.aguiOneAtATime(async () => {
    const draft = draftValue();
    if (!form || draft === undefined || !document.getElementById("tool-refusal")) return;
    const body = new FormData();
    body.append("action", "check");
    body.append("arguments_json", JSON.stringify(draft));
    const res = await window.aguiFetch(location.pathname + location.search, { // the form's URL (buttons named "action" hide form.action)
      method: "POST", body, credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "XMLHttpRequest", Accept: "application/json" },
    });
    if (!res.ok) return; // a preview: the decision itself says what went wrong
    const data = await window.aguiJSON(res);
    if (JSON.stringify(draftValue()) === JSON.stringify(draft)) showRefusal(data.refusal || "");
  });

  function showRefusal(text) {
    const box = document.getElementById("tool-refusal");
    if (!box) return;
    const was = box.hidden ? "" : box.querySelector(".tool-refusal-text").textContent;
    box.hidden = !text;
    window.aguiVisible.set(box.querySelector(".tool-refusal-text"), text);
    if (box.querySelector(".tool-refusal-text").textContent !== was) sayDiffLater(); // it comes after the changes
  }

  /* The preview changes at every keystroke ("Amount: 500 → 4", "→ 45", "→ 450"): it is not a live
     region; what it says is written to one of its own (#diff-live) once the typing has settled. */
  const DIFF_SETTLE_MS = 700;
  let diffTimer = null;
  let diffSaid = "";
  let diffHeard = false; // set once the page has built its editor: only the reviewer's changes are said

  function sayDiffLater() {
    const live = document.getElementById("diff-live");
    if (!live || !diffHeard) return;
    clearTimeout(diffTimer);
    diffTimer = setTimeout(() => {
      const lines = Array.from(preview.children, (li) => li.textContent.trim());
      const refusal = document.getElementById("tool-refusal");
      if (refusal && !refusal.hidden) lines.push(refusal.textContent.replace(/\s+/g, " ").trim());
      const text = lines.filter(Boolean).join("; ");
      if (text !== diffSaid) live.textContent = diffSaid = text;
    }, DIFF_SETTLE_MS);
  }

  /* The reviewer's draft (feedback, edited arguments) for this request, kept for the tab by
     drafts.js: a reload, Back, or the sign-in a lapsed session asks for puts it back. Edits are put
     back only onto the arguments they were made of (the form's digest). A decision the server
     took marks it; a page the server moves on to after it (the next request, the list) forgets it. */
  const DRAFTS = window.aguiDrafts;
  const draftName = detail ? "approval." + detail.dataset.approvalId : null;
  let saveDraft = () => {};

  function forgetSentDrafts() {
    if (!DRAFTS) return;
    const toast = document.getElementById("undo-toast");
    if (toast && !toast.hidden && !sending) return; // an Undo brings them back: kept until the window closes
    for (const name of DRAFTS.names("approval.")) {
      const kept = DRAFTS.read(name);
      if (name !== draftName ? kept && kept.sent : !form) DRAFTS.write(name, null);
    }
  }

  function keepDrafts(raw, editable) {
    if (!DRAFTS) return;
    const feedback = document.getElementById("feedback");
    const seen = document.getElementById("seen-field").value;
    const baseline = raw.value; // the arguments as drawn, before any edit
    const kept = DRAFTS.read(draftName);
    // after a refusal the server's page shows what was sent, and says why
    if (kept && !document.getElementById("form-error")) {
      const notes = [];
      if (kept.unsent) {
        notes.push(kept.unsent === "reject" ? gettext("Your rejection was not sent (your session had ended): send it again when you are ready.")
          : kept.unsent === "respond" ? gettext("Your answer was not sent (your session had ended): send it again when you are ready.")
            : gettext("Your approval was not sent (your session had ended): send it again when you are ready."));
      }
      if (kept.feedback && !feedback.value) {
        feedback.value = kept.feedback;
        notes.push(gettext("What you typed here before was put back."));
      }
      if (kept.args && editable && kept.seen === seen) {
        raw.value = kept.args;
        let value;
        try {
          value = JSON.parse(kept.args);
        } catch (e) {
          value = undefined;
        }
        if (editor && value !== null && typeof value === "object" && !Array.isArray(value)) editor.setValue(value);
        else if (editor) {
          setMode(true); // not an object the form can show: the JSON as it was typed
          raw.value = kept.args;
        }
        if (!notes.some((n) => n === gettext("What you typed here before was put back."))) notes.push(gettext("What you typed here before was put back."));
      } else if (kept.args && editable) {
        notes.push(gettext("The arguments changed since you edited them: your edits were not put back."));
      }
      if (notes.length) {
        const note = el("p", kept.unsent ? "banner banner-warn" : "banner", notes.join(" "));
        note.id = "draft-note";
        note.setAttribute("role", "status");
        form.insertAdjacentElement("beforebegin", note);
      }
    }
    // unsent: the decision a lapsed session turned away (its page said so before the sign-in)
    const save = (sent, unsent) => {
      syncRaw();
      const args = editable && raw.value !== baseline ? raw.value : "";
      DRAFTS.write(draftName, feedback.value || args || unsent ? { seen, feedback: feedback.value, args, sent, unsent } : null);
    };
    saveDraft = save;
    save(false);
    form.addEventListener("input", () => save(false));
    form.addEventListener("click", () => save(false)); // the editor's add and remove buttons
  }

  forgetSentDrafts();

  /* In form mode the editor is the truth and the textarea (what the form sends) its copy: written
     again before it is shown or sent, since a browser may restore its earlier text on Back. */
  function syncRaw() {
    if (editor && !jsonMode) {
      document.getElementById("arguments-json").value = window.aguiVisible.jsonEscapes(JSON.stringify(editor.value(), null, 2));
    }
  }

  function setMode(json) {
    const raw = document.getElementById("arguments-json");
    const rawField = document.getElementById("raw-json-field");
    const box = document.getElementById("args-editor");
    const rawError = document.getElementById("arguments-json-error");
    if (json) syncRaw();
    if (!json && editor) {
      const v = draftValue();
      if (v === undefined) {
        rawError.textContent = gettext("Not a valid JSON object: fix it before switching to the form.");
        rawError.hidden = false;
        return;
      }
      editor.setValue(v);
    }
    jsonMode = json;
    rawField.hidden = !json;
    box.hidden = json;
    document.getElementById("mode-form").setAttribute("aria-pressed", String(!json));
    document.getElementById("mode-json").setAttribute("aria-pressed", String(json));
    if (json) raw.focus(); // in form mode the textarea is kept in step, so it already holds the draft
    updateDecision();
  }

  if (form) {
    const raw = document.getElementById("arguments-json");
    const editable = !raw.readOnly;
    const schema = readJSONScript("approval-schema") || {};
    const errors = readJSONScript("approval-errors") || {};
    let initial = current;
    try {
      initial = JSON.parse(raw.value);
    } catch (e) {
      rawProblem = "invalid";
    }
    if (editable && window.SchemaEditor && schema && Object.keys(schema).length) {
      const box = document.getElementById("args-editor");
      editor = window.SchemaEditor.create(box, schema, initial, {
        labels,
        onChange(value) {
          if (!jsonMode) raw.value = window.aguiVisible.jsonEscapes(JSON.stringify(value, null, 2));
          updateDecision();
        },
      });
      // refused as a whole by the server (a name written twice, which JSON.parse reads as its last
      // value): the text comes back as typed, not rewritten from what the browser read of it, which
      // dropped the duplicate and approving again sent the value the reviewer may have read past
      const asTyped = rawProblem || errors.__root__;
      if (!asTyped) raw.value = window.aguiVisible.jsonEscapes(JSON.stringify(editor.value(), null, 2));
      document.getElementById("editor-toolbar").hidden = false;
      document.getElementById("raw-json-field").hidden = true;
      const fieldErrors = Object.fromEntries(Object.entries(errors).filter(([k]) => k !== "__root__"));
      const unplaced = editor.showErrors(fieldErrors);
      if (unplaced.length) {
        const box2 = document.getElementById("editor-errors");
        const ul = el("ul", "error-list");
        for (const [path, messages] of unplaced) ul.appendChild(el("li", null, fmt(gettext("%(field)s: %(errors)s"), { field: path, errors: messages.join("; ") })));
        box2.replaceChildren(ul);
        box2.hidden = false;
      }
      document.getElementById("mode-form").addEventListener("click", () => setMode(false));
      document.getElementById("mode-json").addEventListener("click", () => setMode(true));
      document.getElementById("reset-edits").addEventListener("click", () => {
        editor.reset();
        raw.value = window.aguiVisible.jsonEscapes(JSON.stringify(editor.value(), null, 2));
        updateDecision();
      });
      if (asTyped) {
        jsonMode = true; // so that setMode does not write the form's reading over the text
        setMode(true);
      }
      else if (Object.keys(fieldErrors).length) editor.focusFirst();
    } else {
      const toolbar = document.getElementById("editor-toolbar");
      if (toolbar) toolbar.hidden = true;
    }
    keepDrafts(raw, editable);
    raw.addEventListener("input", () => {
      const error = document.getElementById("arguments-json-error");
      const ok = draftValue() !== undefined;
      error.hidden = ok;
      if (!ok) error.textContent = gettext("Not a valid JSON object.");
      raw.toggleAttribute("aria-invalid", !ok);
      updateDecision();
    });

    // Back to the list as the reviewer left it (filters, page).
    let back = null;
    try {
      back = sessionStorage.getItem(LIST_KEY);
    } catch (e) {
      /* private mode */
    }
    if (back && back.startsWith("/inbox/")) {
      const link = document.getElementById("back-link");
      if (link) link.href = back;
      const next = document.getElementById("next-field");
      if (next && !next.value) next.value = back;
    }

    form.addEventListener("submit", (event) => {
      if (deciding) { // a second click while the first is on its way: one decision
        event.preventDefault();
        return;
      }
      syncRaw();
      const submitter = event.submitter;
      const feedback = document.getElementById("feedback");
      if (submitter && submitter.value === "reject" && !feedback.value.trim()) {
        event.preventDefault();
        let error = document.getElementById("feedback-error");
        if (!error) {
          error = el("p", "field-error");
          error.id = "feedback-error";
          feedback.insertAdjacentElement("afterend", error);
        }
        error.textContent = gettext("Tell the agent why you reject this request.");
        feedback.setAttribute("aria-invalid", "true");
        feedback.setAttribute("aria-describedby", "feedback-error");
        feedback.focus();
        return;
      }
      if (submitter && submitter.value === "approve") {
        if (submitter.disabled) {
          event.preventDefault();
          return;
        }
        // the button asks first exactly when the a key does (needsConfirm)
        if (!approveConfirmed && approvalNeedsConfirm()) {
          event.preventDefault();
          openDetailDialog();
          return;
        }
        approveConfirmed = false;
      }
      event.preventDefault();
      sendDetailDecision(submitter);
    });
    document.getElementById("feedback").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        const submitter = document.getElementById("reject") || document.getElementById("respond");
        if (submitter) form.requestSubmit(submitter);
      }
    });
    updateDecision();
    diffHeard = true;
    if (location.hash === "#edit") {
      if (editor) editor.focusFirst();
      else raw.focus();
    }
  }

  /* The decision goes by script (the plain POST is the fallback without it): when the server cannot be
     reached the page stays as it is, edit and feedback included, and says the decision was not sent;
     trying again sends it. A refusal (an invalid edit, a reason missing) is shown by the server's own
     page with its errors by their fields: the form is then sent the plain way, which it refuses again. */
  let deciding = false;

  /* On its way (a slow phone network): the pressed button says so ("Approving…") and the buttons wait;
     a second tap has nothing to press. No answer for a while: the action bar says so and offers to look
     at the request as it stands (a reload: the draft comes back, a decision that arrived shows). */
  const DECIDE_SLOW_MS = 15000;
  const SENDING_WORDS = { approve: gettext("Approving…"), reject: gettext("Rejecting…"), respond: gettext("Sending…") };
  let slowTimer = null;

  function setSending(submitter, on) {
    const bar = document.getElementById("action-bar");
    if (!bar) return;
    for (const b of bar.querySelectorAll("button[name=action]")) {
      if (on) {
        b.dataset.enabledBefore = b.disabled ? "" : "1";
        b.disabled = true;
      } else if ("enabledBefore" in b.dataset) {
        b.disabled = !b.dataset.enabledBefore;
        delete b.dataset.enabledBefore;
      }
    }
    clearTimeout(slowTimer);
    document.getElementById("decide-slow")?.remove();
    if (on && submitter && SENDING_WORDS[submitter.value]) {
      submitter.dataset.label = submitter.textContent;
      submitter.textContent = SENDING_WORDS[submitter.value];
      submitter.classList.add("is-sending");
      announce(SENDING_WORDS[submitter.value]);
      slowTimer = setTimeout(() => {
        const slow = el("p", "decide-slow", gettext("No answer from the server yet: your decision may or may not have arrived.") + " ");
        slow.id = "decide-slow";
        slow.setAttribute("role", "alert");
        const check = el("a", null, gettext("Check this request’s state"));
        check.href = location.pathname + location.search;
        slow.appendChild(check);
        bar.prepend(slow);
      }, DECIDE_SLOW_MS);
    } else if (!on && submitter && "label" in submitter.dataset) {
      submitter.textContent = submitter.dataset.label;
      delete submitter.dataset.label;
      submitter.classList.remove("is-sending");
      updateDecision(); // the approve button's own words (with edits, n changes) and state
    }
  }

  async function sendDetailDecision(submitter) {
    const notSent = document.getElementById("decide-not-sent");
    const body = new FormData(form);
    if (submitter && submitter.name) body.set(submitter.name, submitter.value);
    deciding = true;
    form.setAttribute("aria-busy", "true");
    setSending(submitter, true);
    if (notSent) notSent.hidden = true;
    try {
      // a lapsed session's redirect is not followed here: followed, the sign-in page it leads to took the
      // server's word that the decision was not sent, and the page then opened showed none
      const res = await window.aguiFetch(location.pathname + location.search, {
        method: "POST", body, credentials: "same-origin", redirect: "manual",
        headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "XMLHttpRequest", Accept: "application/json" },
      });
      if (res.type === "opaqueredirect") {
        // sign in, then back to this page, its draft and a word that the decision is still to send
        saveDraft(false, submitter ? submitter.value : "approve");
        window.location.assign("/accounts/login/?next=" + encodeURIComponent(location.pathname + location.search));
        return;
      }
      let data = {};
      try {
        data = await window.aguiJSON(res);
      } catch (e) {
        if (res.ok) throw e; // an error page: decided nothing
      }
      if (res.ok && data.location) {
        saveDraft(true);
        window.location.assign(data.location); // deciding stays set: nothing more goes from this page
        return;
      }
      if (res.status === 400 && data.code) {
        const action = document.createElement("input");
        action.type = "hidden";
        action.name = submitter ? submitter.name : "action";
        action.value = submitter ? submitter.value : "";
        form.appendChild(action);
        HTMLFormElement.prototype.submit.call(form);
        return;
      }
      throw new Error(data.message || window.aguiStatus(res));
    } catch (e) {
      deciding = false;
      form.removeAttribute("aria-busy");
      setSending(submitter, false);
      const text = gettext("Your decision was not sent.") + " " + e.message;
      if (notSent) {
        window.aguiVisible.set(notSent, text);
        notSent.hidden = false;
      }
      announce(text);
    }
  }

  // The detail's approve dialog (the button or key a, when needsConfirm): the diff again, Enter confirms.
  let approveConfirmed = false;

  function approvalNeedsConfirm() {
    return needsConfirm(detail.dataset.risk, Number(form.dataset.changes || 0), 1);
  }

  function approveNow() {
    const approve = document.getElementById("approve");
    if (!approve || approve.disabled) {
      if (approve) updateDecision();
      return;
    }
    if (approvalNeedsConfirm()) openDetailDialog();
    else form.requestSubmit(approve);
  }

  if (detail && dialog && form) {
    const dform = document.getElementById("decide-dialog-form");
    document.getElementById("decide-dialog-cancel").addEventListener("click", () => dialog.close());
    dform.addEventListener("submit", (event) => {
      event.preventDefault();
      dialog.close();
      approveConfirmed = true;
      form.requestSubmit(document.getElementById("approve"));
    });
  }

  function openDetailDialog() {
    const approve = document.getElementById("approve");
    if (!approve || approve.disabled) {
      if (approve) updateDecision();
      return;
    }
    const draft = draftValue();
    const changes = window.SchemaEditor ? window.SchemaEditor.diff(current, draft || current) : [];
    document.getElementById("decide-dialog-title").textContent = changes.length
      ? gettext("Approve with these edits?") : gettext("Approve as requested?");
    const list = document.getElementById("decide-dialog-list");
    list.replaceChildren(...(changes.length ? diffItems(changes) : [el("li", "muted", gettext("No changes to the arguments."))]));
    const confirm = document.getElementById("decide-dialog-confirm");
    confirm.textContent = changes.length ? gettext("Approve with edits") : gettext("Approve");
    dialog.showModal();
    confirm.focus();
  }

  if (detail) {
    document.addEventListener("keydown", (event) => {
      if (!singleKeys || event.altKey || event.ctrlKey || event.metaKey) return;
      if (document.querySelector("dialog[open]")) return;
      if (typing(event.target)) return;
      if (event.key === "?") {
        event.preventDefault();
        document.getElementById("keys-dialog").showModal();
      } else if (event.key === "/") {
        event.preventDefault();
        window.location.assign("/inbox/#search");
      } else if (event.key === "u" && undoKey()) {
        event.preventDefault();
      } else if (!form || !document.body.contains(form)) {
        return;
      } else if (event.key === "a") {
        event.preventDefault();
        approveNow();
      } else if (event.key === "r") {
        event.preventDefault();
        const feedback = document.getElementById("feedback");
        feedback.focus();
        feedback.placeholder = gettext("Why? Then Ctrl+Enter rejects.");
      } else if (event.key === "e") {
        event.preventDefault();
        if (editor && !jsonMode) editor.focusFirst();
        else document.getElementById("arguments-json").focus();
      }
    });

    renderFinalDiff();
  }
  renderHeldDiff();

  // Decided requests: what changed between the requested and the approved arguments.
  function renderFinalDiff() {
    const finalDiff = document.getElementById("final-diff");
    if (!finalDiff || !window.SchemaEditor) return;
    const asked = readJSONScript("approval-arguments") || {};
    const now = readJSONScript("approval-current") || asked;
    const changes = window.SchemaEditor.diff(asked, now);
    finalDiff.replaceChildren(...(changes.length ? diffItems(changes) : [el("li", "muted", gettext("As requested (no edits)."))]));
  }

  // The reviewer's own approval with edits, held for its undo window: what it will send.
  function renderHeldDiff() {
    const heldDiff = document.getElementById("held-diff");
    if (!heldDiff || !window.SchemaEditor) return;
    const standing = readJSONScript("approval-current") || readJSONScript("approval-arguments") || {};
    heldDiff.replaceChildren(...diffItems(window.SchemaEditor.diff(standing, readJSONScript("held-arguments") || standing)));
  }

  let panelsInflight = false;
  async function refreshPanels() {
    const box = document.getElementById("detail-live-panels");
    if (!box || panelsInflight) return;
    panelsInflight = true;
    try {
      const res = await window.aguiFetch(location.pathname + "?partial=live", { credentials: "same-origin", cache: "no-store" });
      if (!res.ok || res.redirected) return;
      const doc = new DOMParser().parseFromString("<div>" + (await res.text()) + "</div>", "text/html");
      box.replaceChildren(...Array.from(doc.body.firstChild.childNodes).map((n) => document.importNode(n, true)));
    } catch (e) {
      /* out of reach: the panels stay as they were until the next notice */
    } finally {
      panelsInflight = false;
    }
  }

  /* The page follows its request: decided, expired or cancelled elsewhere (or this reviewer's own
     held decision sent or recalled), the page is fetched again and its request part swapped in:
     the header's status, no countdown, the outcome where the form was. */
  const FOLLOW = ["approval.decided", "approval.expired", "approval.cancelled", "approval.held", "approval.undone",
    "approval.rerouted", "approval.sent", "approval.not_sent", "approval.ran"];
  let followInflight = false;

  /* What a decision form asks: the arguments it was drawn for, the answers it offers, what is editable. */
  function formShape(formEl) {
    const seen = formEl.querySelector("#seen-field");
    const raw = formEl.querySelector("#arguments-json");
    const buttons = Array.from(formEl.querySelectorAll("button[name=action]"), (b) => b.value);
    return JSON.stringify([seen ? seen.value : "", raw ? raw.readOnly : true, buttons]);
  }

  async function followDetail(gone) {
    if (followInflight) return;
    followInflight = true;
    try {
      const res = await window.aguiFetch(location.pathname, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } });
      if (gone && (res.status === 403 || res.status === 404)) {
        leaveDetail();
        return;
      }
      if (!res.ok || res.redirected) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("approval-detail");
      const here = document.getElementById("approval-detail");
      if (!fresh || !here) return;
      const freshForm = fresh.querySelector("#decide-form");
      const hereForm = here.querySelector("#decide-form");
      if (freshForm && hereForm) {
        // Still to decide here (another approver's approval of a quorum): the reviewer's edits and
        // feedback stay; only the panels change. A form that asks something else (other arguments,
        // other answers) is built afresh, and the page's draft carries the feedback over.
        if (formShape(freshForm) !== formShape(hereForm)) location.reload();
        else {
          refreshPanels();
          announce(gettext("This request changed."));
        }
        return;
      }
      if (freshForm) {
        location.reload(); // the form is back (an Undo): its editor needs the page's start-up
        return;
      }
      const dialogOpen = document.querySelector("dialog[open]");
      if (dialogOpen && fresh.dataset.status !== "pending") dialogOpen.close();
      // decided: nothing to send. Held (still pending, this reviewer's own decision, which can come in
      // while its POST is on its way): an Undo brings the draft back, so it stays
      if (DRAFTS && draftName && fresh.dataset.status !== "pending") DRAFTS.write(draftName, null);
      const hadFocus = here.contains(document.activeElement);
      here.replaceWith(document.importNode(fresh, true));
      detail = document.getElementById("approval-detail");
      if (hadFocus) { // what had the focus is gone: it goes to what replaced the form
        const target = document.getElementById("outcome-heading") || detail.querySelector("h1");
        if (target) {
          target.tabIndex = -1;
          target.focus();
        }
      }
      for (const id of ["approval-arguments", "approval-current"]) {
        const old = document.getElementById(id);
        const neu = doc.getElementById(id);
        if (old && neu) old.textContent = neu.textContent;
      }
      const freshToast = doc.getElementById("undo-toast");
      if (!freshToast) {
        const toast = document.getElementById("undo-toast");
        if (toast && Date.parse(toast.dataset.due) <= Date.now()) toast.hidden = true;
      }
      renderFinalDiff();
      renderHeldDiff();
      renderViewers();
      tickCountdowns();
      announce(detail.dataset.status === "pending" ? gettext("This request changed.")
        : fmt(gettext("This request is now %(status)s."), { status: (detail.querySelector("#detail-status") || {}).textContent }));
    } catch (e) {
      /* out of reach: the page stays as it was until the next notice */
    } finally {
      followInflight = false;
    }
  }

  /* A policy change gave the request to a group this reviewer is not in: the page can no longer be
     read again, so it keeps what it shows but offers no decision (one would be refused) and says why. */
  function leaveDetail() {
    const dialogOpen = document.querySelector("dialog[open]");
    if (dialogOpen) dialogOpen.close();
    const text = gettext("A policy change gave this request to another group: you no longer decide it.");
    const banner = el("p", "banner banner-warn", text);
    banner.id = "gone-banner";
    banner.setAttribute("role", "status");
    const form = document.getElementById("decide") || document.getElementById("not-yours");
    if (form) form.replaceWith(banner);
    else detail.prepend(banner);
    for (const node of detail.querySelectorAll(".countdown")) node.remove();
    viewing(null);
    announce(text);
  }

  function onDetailNotice(notice) {
    const approval = notice.approval || {};
    if (String(approval.id) !== detail.dataset.approvalId) return;
    // approval.gone: sent to the groups that no longer decide it (its id only)
    if (notice.type === "approval.gone") followDetail(true);
    else if (FOLLOW.includes(notice.type) || (approval.status && approval.status !== detail.dataset.status)) followDetail();
    else refreshPanels();
  }

  /* ------------------------------------------------------------------ socket */

  let attempt = 0;
  let timer = null;

  function setWsState(value) {
    document.body.dataset.wsState = value;
    const status = document.getElementById("conn-status");
    if (status) {
      status.textContent = value === "open" ? gettext("Live")
        : value === "connecting" ? gettext("Connecting…")
        : value === "refused" ? gettext("Not live: sign in again to see changes as they happen")
        : gettext("Reconnecting…");
      status.dataset.state = value;
    }
  }

  /* ---- presence: who else has the request open that this page shows */


  function viewing(id) {
    if (id !== viewingId) viewers.clear();
    viewingId = id;
    renderViewers();
    if (currentWs && currentWs.readyState === WebSocket.OPEN) currentWs.send(JSON.stringify({ type: "viewing", id }));
  }

  function renderViewers() {
    const names = Array.from(new Set(viewers.values())).sort();
    // "ana and finn": the list as the reader's language joins names (Intl.ListFormat)
    const list = names.length > 1 ? new Intl.ListFormat(document.documentElement.lang || undefined, { type: "conjunction" }).format(names) : names[0];
    const text = !names.length ? "" : fmt(ngettext("%(names)s is viewing this request", "%(names)s are viewing this request", names.length), { names: list });
    for (const node of document.querySelectorAll("#viewers, #viewers-bar, #preview-viewers")) {
      node.textContent = text;
      node.hidden = !text;
    }
  }

  function onViewers(notice) {
    if (notice.id !== viewingId) return;
    if (notice.event === "leave") viewers.delete(notice.key);
    else viewers.set(notice.key, String(notice.who || "someone"));
    renderViewers();
  }

  async function onNotice(notice) {
    if (!notice || typeof notice !== "object") return;
    if (notice.type === "approval.viewers") {
      onViewers(notice);
      return;
    }
    state.notices.push(notice);
    if (notice.type === "approval.sent" || notice.type === "approval.not_sent") onHeldOutcome(notice);
    const approval = notice.approval || {};
    if (rowsBody) {
      refreshRows();
      if (approval.id && approval.id === previewShown) loadPreview(true);
    }
    if (detail) onDetailNotice(notice);
    try {
      // a request a policy change routed to the reader's group is new to them too
      if ((notice.type === "approval.requested" || notice.type === "approval.rerouted") && approval.id) {
        const data = await refreshSummary(approval.id);
        if (data.for_me) notifyNew(approval);
      } else if (!rowsBody) {
        await refreshSummary();
      }
    } catch (e) {
      /* the counter is a nicety */
    }
  }

  function connect() {
    clearTimeout(timer);
    timer = null;
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/inbox/");
    currentWs = ws;
    state.ws = ws;
    // gone quiet without closing (net.js): a new socket at once, which fetches what changed meanwhile
    const alive = window.aguiKeepAlive(ws, () => {
      if (currentWs !== ws) return;
      setWsState("closed");
      attempt = 0;
      connect();
    });
    if (document.body.dataset.wsState !== "open") setWsState("connecting");
    let opened = false;
    ws.addEventListener("open", () => {
      opened = true;
      setWsState("open");
      viewers.clear();
      if (viewingId) ws.send(JSON.stringify({ type: "viewing", id: viewingId }));
      // Anything may have changed while we were away.
      if (rowsBody) refreshRows();
      else refreshSummary().catch(() => {});
      // a decided request's part too: what became of its call (approval.ran) may have come before this socket
      if (detail) (detail.dataset.status === "pending" ? refreshPanels() : followDetail());
    });
    ws.addEventListener("message", (msg) => {
      attempt = 0; // the socket works
      alive.heard();
      let data;
      try {
        data = JSON.parse(msg.data);
      } catch (e) {
        return;
      }
      if (data && data.type === "pong") return; // the keep-alive's answer
      for (const notice of Array.isArray(data) ? data : [data]) onNotice(notice);
    });
    ws.addEventListener("close", (event) => {
      if (currentWs !== ws) return;
      if (event.code === 4401 || event.code === 4403) {
        setWsState("refused");  // signed out (or reviews nothing): retrying cannot help
        return;
      }
      setWsState("closed");
      // Closed with 4011 (Redis away), the socket had been accepted only to be told so: the
      // backoff keeps growing. Any other close of an opened socket starts it over.
      if (opened && event.code !== 4011) attempt = 0;
      const base = Math.min(8000, 500 * Math.pow(2, attempt));
      attempt += 1;
      timer = setTimeout(connect, base / 2 + Math.random() * (base / 2));
    });
  }

  /* Reached by a decision (?held=): the request page moves on to the next request, or to the list
     after the last, and a status already in the page as it loads is not read out. The heading takes
     the focus (the next request's headline, or the list's), and the Undo toast's words go to the live
     region once the page has settled, so the decision and the change of request are both heard. */
  const ARRIVAL_SAY_MS = 500;

  function arrivedAfterDecision() {
    if (!new URLSearchParams(location.search).has("held")) return;
    const heading = document.getElementById(detail ? "detail-title" : "inbox-title");
    if (heading && (!document.activeElement || document.activeElement === document.body)) heading.focus();
    const toast = document.getElementById("undo-toast");
    // on the next request's page its line says both: what was decided, and that this is another request
    const line = document.getElementById("decided-line");
    const text = line ? [".decided-what", ".decided-next"].map((s) => (line.querySelector(s) || {}).textContent || "")
      .join(" ").replace(/\s+/g, " ").trim().replace(/\.$/, "")
      : toast && !toast.hidden ? toast.querySelector(".undo-text").textContent.trim() : "";
    if (!text || !toast) return;
    setTimeout(() => {
      const undoable = !toast.hidden && !toast.querySelector("form").hidden; // not yet "Sending…"
      announce(undoable && keyWords ? fmt(gettext("%(done)s; Undo with u."), { done: text }) : text + ".");
    }, ARRIVAL_SAY_MS);
  }

  arrivedAfterDecision();
  tickCountdowns();
  setInterval(tickCountdowns, 1000);
  if (detail) viewingId = detail.dataset.approvalId;
  if (rowsBody || detail) connect();
  else document.body.dataset.wsState = "closed";
})();
