/*
 * chat.js — the chat page: thread creation, the composer, and the AG-UI event stream of one
 * thread over a WebSocket (one AG-UI event per frame, camelCase JSON).
 *
 * Every piece of user, model or tool text is inserted with textContent (or through
 * markdown.js: markdown-it with raw HTML off, then DOMPurify). Nothing here assigns innerHTML.
 *
 * For tests: window.aguiChat = {ws, events, state}; document.body.dataset.wsState.
 */
(function () {
  "use strict";

  const configEl = document.getElementById("chat-config");
  const config = configEl ? JSON.parse(configEl.textContent || "{}") || {} : {};
  const agents = Array.isArray(config.agents) ? config.agents : [];

  // Words come from Django's JavaScript catalogue (/jsi18n/, loaded by base.html): gettext,
  // ngettext, interpolate; dates and numbers in the page's language (<html lang>).
  const LANG = document.documentElement.lang || undefined;
  // times in the reader's zone (people.middleware, base.html): the one they chose, else their browser's;
  // a name this browser does not know falls back to its own (a time is never worth the page)
  const TZ = ((zone) => {
    try {
      return zone && new Intl.DateTimeFormat("en", { timeZone: zone }).resolvedOptions().timeZone;
    } catch (e) {
      return undefined;
    }
  })(document.documentElement.dataset.timeZone) || undefined;
  const fmt = (text, values) => interpolate(text, values, true);

  const aguiChat = { ws: null, events: [], state: {}, approvals: {}, stateMeta: { version: 0, provisional: [] } };
  window.aguiChat = aguiChat;
  // what requesters and models wrote is set with V.set (bidi controls shown, not obeyed: visible-text.js)
  const V = window.aguiVisible;

  /* ------------------------------------------------------------------ helpers */

  function $(id) {
    return document.getElementById(id);
  }

  /* el("div", {class: "x", dataset: {a: 1}, text: "t", hidden: true}, child, "text", ...) */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === undefined || value === null || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") window.aguiVisible.set(node, String(value)); // bidi controls shown, not obeyed
        else if (key === "dataset") Object.assign(node.dataset, value);
        else if (key === "hidden") node.hidden = true;
        else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
        else node.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function getCookie(name) {
    for (const part of document.cookie ? document.cookie.split(";") : []) {
      const [k, ...rest] = part.trim().split("=");
      if (k === name) return decodeURIComponent(rest.join("="));
    }
    return "";
  }

  async function postJSON(url, body, method) {
    const res = await window.aguiFetch(url, {
      method: method || "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRFToken": getCookie("csrftoken"),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try {
      data = await window.aguiJSON(res);
    } catch (e) {
      data = { message: e.message }; // a page that is not JSON (a proxy's 502): a sentence, not its HTML
    }
    return { status: res.status, ok: res.ok, data: data || {} };
  }

  /* Best human-readable message from an error response body. A field's own sentence ("Ensure this
     field has no more than 20000 characters.") says more than the summary `message` ("invalid input")
     that comes with it, so field errors come first: alone, just their sentences; several fields, each named. */
  function errorText(data, status) {
    if (data) {
      const fields = [];
      const source = data.errors && typeof data.errors === "object" && !Array.isArray(data.errors) ? data.errors : data;
      for (const [key, value] of Object.entries(source)) {
        if (["message", "detail", "error", "code"].includes(key)) continue;
        const msgs = Array.isArray(value) ? value.filter((v) => typeof v === "string") : typeof value === "string" && source !== data ? [value] : [];
        if (msgs.length) fields.push([key, msgs.join(" ")]);
      }
      if (fields.length === 1 || (fields.length && fields.every(([key]) => key === "non_field_errors"))) return fields.map(([, m]) => m).join(" ");
      if (fields.length) {
        return fields.map(([key, m]) => key === "non_field_errors" ? m : fmt(gettext("%(field)s: %(errors)s"), { field: key, errors: m })).join("; ");
      }
      if (typeof data.message === "string" && data.message) return data.message;
      if (typeof data.detail === "string" && data.detail) return data.detail;
      if (typeof data.error === "string" && data.error) return data.error;
    }
    return window.aguiStatus(status);
  }

  function prettyJSON(text) {
    if (typeof text !== "string") {
      try {
        return JSON.stringify(text, null, 2);
      } catch (e) {
        return String(text);
      }
    }
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (e) {
      return text;
    }
  }

  function parseArgs(value) {
    if (value && typeof value === "object") return value;
    if (typeof value === "string") {
      try {
        const parsed = JSON.parse(value);
        return parsed && typeof parsed === "object" ? parsed : {};
      } catch (e) {
        return {};
      }
    }
    return {};
  }

  function displayValue(v) {
    if (v === undefined) return gettext("(none)");
    if (v === null) return "null";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function formatRemaining(ms) {
    if (ms <= 0) return gettext("expired");
    const s = Math.floor(ms / 1000);
    if (s < 60) return fmt(gettext("%(seconds)s s"), { seconds: s });
    const m = Math.floor(s / 60);
    if (m < 60) return fmt(gettext("%(minutes)s min %(seconds)s s"), { minutes: m, seconds: String(s % 60).padStart(2, "0") });
    const h = Math.floor(m / 60);
    if (h < 48) return fmt(gettext("%(hours)s h %(minutes)s min"), { hours: h, minutes: String(m % 60).padStart(2, "0") });
    return fmt(gettext("%(days)s d %(hours)s h"), { days: Math.floor(h / 24), hours: h % 24 });
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const node of document.querySelectorAll(".countdown[data-expires]")) {
      const iso = node.dataset.expires;
      const t = iso ? Date.parse(iso) : NaN;
      if (!Number.isFinite(t)) continue;
      const left = t - now;
      const prefix = node.dataset.prefix ? node.dataset.prefix + " · " : "";
      node.textContent = prefix + (left > 0 ? fmt(gettext("expires in %(left)s"), { left: formatRemaining(left) }) : gettext("expiry reached"));
      node.classList.toggle("urgent", left > 0 && left < 60000);
      node.classList.toggle("expired", left <= 0);
    }
  }

  /* "12:03" today, "Mon 12:03" this week, "1 Dec 12:03" before; the full date and zone on hover. */
  function when(value) {
    const d = value instanceof Date ? value : new Date(value);
    if (!Number.isFinite(d.getTime())) return "";
    const now = new Date();
    const day = (x) => x.toLocaleDateString("en-CA", { timeZone: TZ });  // the calendar day in that zone
    const time = d.toLocaleTimeString(LANG, { hour: "2-digit", minute: "2-digit", timeZone: TZ });
    if (day(d) === day(now)) return time;
    if (now - d < 6 * 86400000 && now >= d) return d.toLocaleString(LANG, { weekday: "short", hour: "2-digit", minute: "2-digit", timeZone: TZ });
    return d.toLocaleString(LANG, { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZone: TZ });
  }
  function whenTitle(value) {
    const d = new Date(value);
    return Number.isFinite(d.getTime()) ? d.toLocaleString(LANG, { dateStyle: "full", timeStyle: "long", timeZone: TZ }) : "";
  }
  /* <time datetime> elements under `root` (the chat list; chat-threads.js calls it after a refresh). */
  function formatTimes(root) {
    for (const t of (root || document).querySelectorAll("time[datetime]")) {
      t.textContent = when(t.getAttribute("datetime"));
      t.title = whenTitle(t.getAttribute("datetime"));
    }
  }
  window.aguiWhen = formatTimes;
  formatTimes(document.getElementById("thread-list"));

  /* ------------------------------------------------------------------ new chat */

  const agentSelect = $("agent-select");
  if (agentSelect) {
    const showAgentInfo = () => {
      for (const info of document.querySelectorAll(".agent-info")) {
        info.hidden = info.dataset.agent !== agentSelect.value;
      }
    };
    agentSelect.addEventListener("change", showAgentInfo);
    showAgentInfo();
  }

  /* A chat this tab just made opens with its composer focused (not any chat opened: a reader arriving
     from a link starts at the top of the page). */
  const FOCUS_KEY = "agui.chat.focus-composer";
  function focusComposerOn(id) {
    try {
      sessionStorage.setItem(FOCUS_KEY, String(id));
    } catch (e) {
      // storage refused: the new page opens as any other
    }
  }
  function takeComposerFocus(id) {
    try {
      if (sessionStorage.getItem(FOCUS_KEY) !== String(id)) return false;
      sessionStorage.removeItem(FOCUS_KEY);
      return true;
    } catch (e) {
      return false;
    }
  }

  const newChatForm = $("new-chat-form");
  if (newChatForm) {
    newChatForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = $("new-chat");
      const errorBox = $("new-chat-error");
      errorBox.hidden = true;
      button.disabled = true;
      try {
        const res = await postJSON("/api/threads/", { agent: agentSelect.value });
        if ((res.status === 201 || res.ok) && res.data && res.data.id !== undefined) {
          focusComposerOn(res.data.id);
          window.location.assign("/chat/" + encodeURIComponent(res.data.id) + "/");
          return;
        }
        errorBox.textContent = errorText(res.data, res.status);
        errorBox.hidden = false;
      } catch (e) {
        errorBox.textContent = fmt(gettext("Could not create the chat: %(error)s"), { error: e.message });
        errorBox.hidden = false;
      }
      button.disabled = false;
    });
  }

  if (!config.threadId) {
    document.body.dataset.wsState = "closed";
    return;
  }

  /* ------------------------------------------------------------------ elements */

  const threadId = String(config.threadId);
  const messagesEl = $("messages");
  const conversationEl = $("conversation");
  const orphanEl = $("orphan-approvals");
  const stateView = $("state-view");
  const composer = $("composer");
  const composerForm = $("composer-form");
  const sendButton = $("send");
  const composerNote = $("composer-note");
  const runStatus = $("run-status");
  const runStatusText = $("run-status-text");
  const runError = $("run-error");
  const runErrorText = $("run-error-text");
  const retryButton = $("retry");
  const notice = $("chat-notice");
  const noticeText = $("chat-notice-text");
  const connStatus = $("conn-status");
  const stopButton = $("stop");
  const stepTrail = $("step-trail");
  const announcer = $("chat-announcer");

  const coarse = window.matchMedia && window.matchMedia("(pointer: coarse)").matches;
  const placeholder = coarse ? composer.placeholder : fmt(gettext("%(placeholder)s (Enter to send, Shift+Enter for a new line)"), { placeholder: composer.placeholder });
  const startersEl = $("starters");

  const heading = $("chat-heading");
  if (heading && !heading.textContent.trim()) {
    heading.textContent = heading.dataset.agent || gettext("Chat");
  }

  /* ------------------------------------------------------------------ model */

  const msgEls = new Map(); // messageId -> <article>
  const msgText = new Map(); // messageId -> raw text (assistant markdown source)
  const toolCards = new Map(); // toolCallId -> {el, argsEl, argsText, resultEl, name}
  const toolResults = new Map(); // toolCallId -> result content (arrived before its card)
  const outcomes = new Map(); // toolCallId -> {status, message, result} (CUSTOM tool_outcome: the person's words)
  const msgInfo = new Map(); // messageId -> {at, stopped} (CUSTOM message_info, or when it arrived here)
  const questions = new Map(); // requestId -> status of the agents' questions (chat-questions.js renders them)
  const approvals = new Map(); // approvalId -> Approval
  const withdrawn = new Set(); // approvalIds this reader's Withdraw took back (said by the run's status)
  const approvalCards = new Map(); // approvalId -> <section> (kept across snapshots)
  const dirty = new Set(); // messageIds whose markdown needs re-rendering
  // Text messages and tool calls whose START arrived since the last snapshot: deltas for anything
  // else were already in the snapshot (the socket may deliver a few events twice around it).
  const openText = new Set();
  const openCalls = new Set();
  // Messages the last snapshot held: history, never announced (a replayed run streams them again).
  const snapshotIds = new Set();
  const announcedIds = new Set();
  const run = { id: null, active: false, failedId: null, stopping: false }; // the thread's latest run
  const steps = []; // workflow steps: {runId, name, done}
  let rafPending = false;
  let localSeq = 0;
  let lastUserText = "";
  let sending = false;

  /* Keep the view pinned to the bottom when the reader is already there. What scrolls is the conversation
     box, except on a short screen (a phone in landscape, a keyboard that shrank the window: app.css's
     max-height rule), where the whole page does: there its scrollTop did nothing, and the answer and the
     approval card ran off the bottom while the page stood still. */
  function pageScrolls() {
    if (!conversationEl) return true;
    const overflow = getComputedStyle(conversationEl).overflowY;
    return overflow !== "auto" && overflow !== "scroll";
  }
  /* Where the page's window ends when it shows the latest: the composer's end, not the page's. The chat
     list beside the conversation may run on far below it (a reader with many chats): the page's end
     was the list's, and following put the answer and the composer above the window. */
  function conversationEnd() {
    const last = composerForm || conversationEl;
    return last ? last.getBoundingClientRect().bottom + window.scrollY + 8 : document.documentElement.scrollHeight;
  }
  function nearBottom() {
    if (pageScrolls()) return Math.abs(conversationEnd() - window.scrollY - window.innerHeight) < 120;
    return conversationEl.scrollHeight - conversationEl.scrollTop - conversationEl.clientHeight < 120;
  }
  function pastEnd() { // read on below the conversation (the chat list): not following it
    return pageScrolls() && window.scrollY + window.innerHeight > conversationEnd() + 120;
  }
  function scrollTop() {
    return pageScrolls() ? window.scrollY : conversationEl.scrollTop;
  }
  /* Whether the view follows new content: until the reader scrolls up, and again once they are back at
     the end. Kept as a state, not measured before each change: not every change passes through mutate()
     (the class that ends streaming, the composer's note, markdown and fonts laid out a frame later), and
     a growth past the margin between two measures read as "the reader went away", and the answer ran off
     the bottom. Only the reader moving up, or on below the conversation (or the content shrinking under
     them), ends following. */
  let following = true;
  let lastTop = 0;
  function noteScroll() {
    const top = scrollTop();
    if (top < lastTop - 1) following = nearBottom(); // the reader went up, or the content shrank under them
    else if (top > lastTop + 1 && pastEnd()) following = false;
    else if (nearBottom()) following = true;
    lastTop = top;
  }
  window.addEventListener("scroll", noteScroll, { passive: true });
  if (conversationEl) conversationEl.addEventListener("scroll", noteScroll, { passive: true });
  function scrollToBottom() {
    if (pageScrolls()) window.scrollTo(0, Math.max(0, conversationEnd() - window.innerHeight)); // the latest and the composer
    else conversationEl.scrollTop = conversationEl.scrollHeight;
    following = true;
    lastTop = scrollTop();
  }
  function mutate(fn) {
    fn();
    if (following) scrollToBottom();
  }
  // What an event changed, wherever on the page, is followed on the next frame, once its layout is done.
  let followPending = false;
  function followSoon() {
    if (followPending) return;
    followPending = true;
    requestAnimationFrame(() => {
      followPending = false;
      if (following) scrollToBottom();
    });
  }

  function roleLabel(role) {
    if (role === "user") return gettext("You");
    if (role === "assistant") return gettext("Assistant");
    if (role === "system") return gettext("System");
    return role || gettext("Message");
  }

  function createMessageEl(id, role) {
    const article = el(
      "article",
      { class: "msg msg-" + (role || "assistant"), "aria-label": fmt(gettext("%(role)s message"), { role: roleLabel(role) }) },
      el("div", { class: "msg-meta" }, el("span", { class: "msg-role", text: roleLabel(role) }), el("time", { class: "msg-time" })),
      el("div", { class: role === "user" ? "msg-body msg-plain" : "msg-body md" }),
      el("div", { class: "msg-tools" })
    );
    if (id !== undefined && id !== null) {
      article.dataset.messageId = String(id);
      msgEls.set(String(id), article);
      applyInfo(article);
    }
    return article;
  }

  /* The time a message was written (and "Stopped" on a reply a Stop cut off). */
  function applyInfo(article, fallbackNow) {
    const key = article.dataset.messageId;
    let info = key ? msgInfo.get(key) : null;
    if (!info && fallbackNow && key) {
      info = { at: new Date().toISOString() };
      msgInfo.set(key, info);
    }
    const t = article.querySelector(".msg-time");
    if (t && info && info.at) {
      t.setAttribute("datetime", info.at);
      t.textContent = when(info.at);
      t.title = whenTitle(info.at);
    }
    if (info && info.stopped) markStopped(article);
  }

  function markStopped(article) {
    if (article.classList.contains("msg-stopped")) return;
    article.classList.add("msg-stopped");
    article.querySelector(".msg-meta").appendChild(el("span", { class: "badge msg-stopped-badge", text: gettext("Stopped") }));
  }

  /* The element of a message, created at the end of the list when unknown. */
  function ensureMessage(id, role) {
    const key = String(id);
    let article = msgEls.get(key);
    if (!article) {
      article = createMessageEl(key, role || "assistant");
      insertBeforePending(article);
    }
    return article;
  }

  /* Messages from the server go before local bubbles that have no id yet. */
  function insertBeforePending(node) {
    const firstPending = messagesEl.querySelector(".msg.pending");
    messagesEl.insertBefore(node, firstPending);
  }

  function setMessageText(id, text, streaming) {
    const key = String(id);
    msgText.set(key, text || "");
    const article = msgEls.get(key);
    if (article) article.classList.toggle("streaming", !!streaming);
    scheduleRender(key);
  }

  function scheduleRender(key) {
    dirty.add(key);
    if (rafPending) return;
    rafPending = true;
    requestAnimationFrame(flushRender);
  }

  function flushRender() {
    rafPending = false;
    mutate(() => {
      for (const key of dirty) {
        const article = msgEls.get(key);
        if (!article) continue;
        const body = article.querySelector(".msg-body");
        const text = msgText.get(key) || "";
        if (article.classList.contains("msg-user")) body.textContent = text;
        else body.replaceChildren(window.renderMarkdown ? window.renderMarkdown(text) : document.createTextNode(text));
        body.hidden = !text && !article.classList.contains("streaming");
      }
      dirty.clear();
    });
  }

  /* The assistant message that a tool call without parentMessageId belongs to. */
  function lastAssistantMessage() {
    const items = messagesEl.querySelectorAll(".msg:not(.pending)");
    const last = items[items.length - 1];
    if (last && last.classList.contains("msg-assistant")) return last;
    const article = createMessageEl("local-" + ++localSeq, "assistant");
    insertBeforePending(article);
    return article;
  }

  function ensureToolCard(toolCallId, name, parentMessageId) {
    const key = String(toolCallId);
    let card = toolCards.get(key);
    if (card) {
      if (name && !card.name) {
        card.name = name;
        card.nameEl.textContent = name;
      }
      return card;
    }
    const parent = parentMessageId ? ensureMessage(parentMessageId, "assistant") : lastAssistantMessage();
    const nameEl = el("code", { class: "tool-name", text: name || gettext("tool") });
    const titleEl = el("span", { class: "tool-title", hidden: true });
    const statusEl = el("span", { class: "badge tool-status", hidden: true });
    const argsEl = el("pre", { class: "tool-args" });
    const argsLabel = el("summary", { text: gettext("Arguments") });
    const resultEl = el("pre", { class: "tool-result-body" });
    const resultLabel = el("div", { class: "tool-section-label", text: gettext("Result") });
    const resultBox = el("div", { class: "tool-result", hidden: true }, resultLabel, resultEl);
    const outcomeEl = el("p", { class: "tool-outcome", hidden: true });
    const root = el(
      "div",
      { class: "tool-card streaming", dataset: { toolCallId: key }, role: "group", "aria-label": fmt(gettext("Tool call %(name)s"), { name: name || "" }) },
      el("div", { class: "tool-head" }, el("span", { class: "tool-icon", "aria-hidden": "true", text: "⚙" }), titleEl, nameEl, statusEl),
      el("details", { class: "tool-args-box", open: true }, argsLabel, argsEl),
      el("div", { class: "approval-slot" }),
      outcomeEl,
      resultBox
    );
    card = { el: root, nameEl, titleEl, statusEl, argsEl, argsLabel, argsText: "", resultEl, resultLabel, resultBox, outcomeEl, name: name || "" };
    toolCards.set(key, card);
    parent.querySelector(".msg-tools").appendChild(root);
    if (toolResults.has(key)) setToolResult(key, toolResults.get(key));
    if (outcomes.has(key)) setOutcome(outcomes.get(key));
    // An approval that arrived before its tool card moves into the card.
    for (const approval of approvals.values()) {
      if (String(approval.toolCallId) === key) renderApproval(approval);
    }
    return card;
  }

  /* The workflow's own calls: a question (its card shows it) and a handoff are no tool the person
     needs to read the arguments of. */
  function internalCall(card) {
    const name = card.name || "";
    if (name === "request_info") return "question";
    if (name.startsWith("handoff_to_")) return "handoff";
    return null;
  }

  function setToolArgs(card, text, done) {
    card.argsText = text;
    const internal = internalCall(card);
    if (internal) {
      card.el.classList.add("tool-internal");
      card.el.querySelector(".tool-args-box").hidden = true;
      card.argsEl.textContent = ""; // the schema of a question is the program's, not the person's
      if (internal === "question") {
        card.titleEl.textContent = gettext("A question for you");
        card.titleEl.hidden = false;
        card.el.classList.add("has-title");
      } else if (internal === "handoff") {
        const target = card.name.slice("handoff_to_".length);
        card.titleEl.textContent = fmt(gettext("Passed to %(agent)s"), { agent: participantTitles[target] || target.replace(/_/g, " ") });
        card.titleEl.hidden = false;
        card.el.classList.add("has-title");
      }
    }
    if (!card.shownArgs && !internalCall(card)) V.set(card.argsEl, done ? prettyJSON(text) : text);
    card.el.classList.toggle("streaming", !done);
  }

  /* The card's status badge: waiting, done, blocked, rejected, expired, cancelled, stopped, failed. */
  const CARD_STATUS = {
    waiting: gettext("Waiting"), done: gettext("Done"), blocked: gettext("Blocked"), rejected: gettext("Rejected"), expired: gettext("Expired"),
    cancelled: gettext("Cancelled"), stopped: gettext("Stopped"), failed: gettext("Failed"), responded: gettext("Answered"),
  };
  function setCardStatus(card, status) {
    for (const k of Object.keys(CARD_STATUS)) card.el.classList.remove("outcome-" + k);
    card.statusEl.hidden = !status;
    if (!status) return;
    card.el.classList.add("outcome-" + status);
    card.el.dataset.outcome = status;
    card.statusEl.className = "badge tool-status tool-status-" + status;
    card.statusEl.textContent = CARD_STATUS[status] || status;
  }

  /* The tool result is the model's text: the person sees the outcome's words instead (setOutcome). */
  function setToolResult(toolCallId, content) {
    const key = String(toolCallId);
    toolResults.set(key, content);
    const card = toolCards.get(key);
    if (!card) return;
    card.el.classList.remove("streaming");
    card.el.classList.add("has-result");
    // Long arguments stay out of the way once the call is done.
    if (card.argsText && card.argsText.length > 400) card.el.querySelector(".tool-args-box").open = false;
  }

  /* CUSTOM tool_outcome {toolCallId, status, message, result, said}: how the call ended, for the person.
     `result` is the tool's answer as the model reads it (English); `said` the same in the reader's language,
     when the tool words it: then the card says that, and keeps the result as what the assistant was told. */
  function setOutcome(value) {
    if (!value || value.toolCallId === undefined) return;
    const key = String(value.toolCallId);
    outcomes.set(key, value);
    const card = toolCards.get(key);
    if (!card) return;
    card.el.classList.remove("streaming");
    setCardStatus(card, value.status);
    if (value.title && card.titleEl.hidden && !internalCall(card)) {
      V.set(card.titleEl, value.title);
      card.titleEl.hidden = false;
      card.el.classList.add("has-title");
    }
    const ran = value.status === "done";
    if (internalCall(card) && ran) {
      card.resultBox.hidden = true; // the question card and the step trail say it
      card.outcomeEl.hidden = true;
      updateComposer();
      return;
    }
    card.resultBox.hidden = !ran || !value.result;
    if (ran && value.result) V.set(card.resultEl, prettyJSON(value.result));
    card.resultLabel.textContent = ran && value.said ? gettext("What the assistant was told") : gettext("Result");
    const words = ran ? value.said || "" : value.message || "";
    card.outcomeEl.hidden = !words;
    V.set(card.outcomeEl, words);
    updateComposer();
  }

  /* ------------------------------------------------------------------ snapshot */

  function renderSnapshot(messages) {
    mutate(() => {
      const pending = Array.from(messagesEl.querySelectorAll(".msg.pending"));
      messagesEl.replaceChildren();
      msgEls.clear();
      msgText.clear();
      toolCards.clear();
      toolResults.clear();
      dirty.clear();
      snapshotIds.clear();

      for (const m of messages || []) {
        if (!m || m.role === "tool") continue;
        if (m.role === "system" || m.role === "developer") continue;
        const article = createMessageEl(m.id !== undefined ? m.id : "local-" + ++localSeq, m.role);
        messagesEl.appendChild(article);
        snapshotIds.add(article.dataset.messageId);
        const text = typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p) => (p && p.text) || "").join("") : "";
        msgText.set(article.dataset.messageId, text);
        dirty.add(article.dataset.messageId);
        for (const tc of m.toolCalls || []) {
          const fn = tc.function || {};
          const card = ensureToolCard(tc.id, fn.name, article.dataset.messageId);
          setToolArgs(card, fn.arguments || "", true);
        }
      }
      for (const m of messages || []) {
        if (m && m.role === "tool" && m.toolCallId !== undefined) setToolResult(m.toolCallId, m.content);
      }
      for (const p of pending) messagesEl.appendChild(p);
      // Approvals whose tool card is known now move into it.
      orphanEl.replaceChildren();
      for (const approval of approvals.values()) renderApproval(approval);
    });
    flushRender();
    if (!openedAtEnd) { // a chat opens at its latest message (the page's end, where the page scrolls)
      openedAtEnd = true;
      scrollToBottom();
    }
  }
  let openedAtEnd = false;

  /* ------------------------------------------------------------------ state */

  function decodePointer(path) {
    if (path === "") return [];
    if (typeof path !== "string" || path[0] !== "/") throw new Error("bad pointer " + path);
    return path.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  }

  /* A pointer's token names the document's own member only: "__proto__" or "constructor" in a
     patch (state the agent or a person wrote) is a key like any other, never Object.prototype. */
  const hasOwn = (node, t) => Object.prototype.hasOwnProperty.call(node, t);
  const put = (node, t, value) => Object.defineProperty(node, t, { value, writable: true, enumerable: true, configurable: true });

  function resolveParent(doc, tokens) {
    let node = doc;
    for (const t of tokens.slice(0, -1)) {
      if (node === null || typeof node !== "object" || !hasOwn(node, t)) throw new Error("missing " + t);
      node = node[t];
    }
    if (node === null || typeof node !== "object") throw new Error("not a container");
    return node;
  }

  function getAt(doc, path) {
    let node = doc;
    for (const t of decodePointer(path)) {
      if (node === null || typeof node !== "object" || !hasOwn(node, t)) throw new Error("missing " + t);
      node = node[t];
    }
    return node;
  }

  function clone(v) {
    return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
  }

  function arrayIndex(arr, token, forAdd) {
    if (forAdd && token === "-") return arr.length;
    if (!/^(0|[1-9]\d*)$/.test(token)) throw new Error("bad index " + token);
    const i = Number(token);
    if (i > arr.length || (!forAdd && i >= arr.length)) throw new Error("index out of range");
    return i;
  }

  function addAt(doc, path, value) {
    const tokens = decodePointer(path);
    if (!tokens.length) return value;
    const parent = resolveParent(doc, tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, value);
    else put(parent, last, value);
    return doc;
  }

  function removeAt(doc, path) {
    const tokens = decodePointer(path);
    if (!tokens.length) throw new Error("cannot remove root");
    const parent = resolveParent(doc, tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false), 1);
    else if (hasOwn(parent, last)) delete parent[last];
    else throw new Error("missing " + last);
    return doc;
  }

  function replaceAt(doc, path, value) {
    const tokens = decodePointer(path);
    if (!tokens.length) return value;
    const parent = resolveParent(doc, tokens);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) parent[arrayIndex(parent, last, false)] = value;
    else if (hasOwn(parent, last)) put(parent, last, value);
    else throw new Error("missing " + last);
    return doc;
  }

  /* Apply RFC 6902 operations to a copy of `doc`; throws when any operation fails. */
  function applyPatch(doc, ops) {
    let out = clone(doc);
    for (const op of ops || []) {
      switch (op.op) {
        case "add":
          out = addAt(out, op.path, clone(op.value));
          break;
        case "remove":
          out = removeAt(out, op.path);
          break;
        case "replace":
          out = replaceAt(out, op.path, clone(op.value));
          break;
        case "move": {
          const value = getAt(out, op.from);
          out = removeAt(out, op.from);
          out = addAt(out, op.path, value);
          break;
        }
        case "copy":
          out = addAt(out, op.path, clone(getAt(out, op.from)));
          break;
        case "test":
          if (JSON.stringify(getAt(out, op.path)) !== JSON.stringify(op.value)) throw new Error("test failed");
          break;
        default:
          throw new Error("unknown op " + op.op);
      }
    }
    return out;
  }

  function setState(next) {
    aguiChat.state = next === undefined ? {} : next;
    V.set(stateView, JSON.stringify(aguiChat.state, null, 2));
    const empty = !aguiChat.state || (typeof aguiChat.state === "object" && !Object.keys(aguiChat.state).length);
    const stateEmpty = $("state-empty");
    if (stateEmpty) stateEmpty.hidden = !empty;
    const aside = $("chat-aside");
    // an agent without state still shows state a client put there
    if (aside && !config.hasState) aside.hidden = empty;
    // on a phone the state is a drawer: its button says when there is something new in it
    const stateButton = $("toggle-state");
    if (stateButton && !empty && aside && !aside.classList.contains("drawer-open")) stateButton.classList.add("has-news");
    // Cards (recipe, checklist, document) with predicted values marked: state-panel.js.
    if (window.aguiStatePanel) window.aguiStatePanel.render(aguiChat.state, aguiChat.stateMeta);
  }

  /* ------------------------------------------------------------------ approvals */

  const STATUS_LABELS = {
    pending: gettext("Pending"),
    approved: gettext("Approved"),
    modified: gettext("Approved with edits"),
    rejected: gettext("Rejected"),
    responded: gettext("Answered with guidance"),
    expired: gettext("Expired"),
    cancelled: gettext("Cancelled"),
  };

  function approverText(approval) {
    const approver = approval.approver || {};
    if (approver.kind === "group") return approver.group ? fmt(gettext("Awaiting review by %(group)s"), { group: approver.group }) : gettext("Awaiting review by a reviewer");
    if (approver.kind === "requester") return approval.canDecide ? gettext("Waiting for your decision") : gettext("Waiting for the requester's decision");
    return gettext("Awaiting review");
  }

  /* A waiting request its groups cannot approve as they stand (outOfReach, the server's count): said
     plainly, so the requester does not wait on a review that cannot come. */
  function outOfReachText(approval) {
    const short = approval.outOfReach;
    if (!short || (approval.status || "pending") !== "pending") return "";
    return short.adminsTold
      ? gettext("Nobody can approve this request right now. The admins have been told.")
      : gettext("Nobody can approve this request right now.");
  }

  /* A value as the tool's schema says: money with two decimals and its currency, 500 not 500.0. */
  function formatArg(field, value, args, schema) {
    const props = (schema && schema.properties) || {};
    const prop = (Object.prototype.hasOwnProperty.call(props, field) && props[field]) || {};
    if (typeof value === "number") {
      const currency = args && typeof args.currency === "string" ? args.currency : "";
      // money in the reader's digits ("1,234.50 USD", "1.234,50 USD", "1 234,50 USD"), the code kept as sent
      if (prop.type === "number" && currency) {
        return new Intl.NumberFormat(LANG, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(value) + " " + currency;
      }
      return String(value);
    }
    if (typeof value === "string") return value;
    return displayValue(value);
  }

  function diffArgs(before, after) {
    const a = parseArgs(before);
    const b = parseArgs(after);
    const keys = Array.from(new Set([...Object.keys(a), ...Object.keys(b)]));
    return keys
      .filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]))
      .map((k) => ({ field: k, from: a[k], to: b[k] }));
  }

  function renderApproval(approval) {
    const id = String(approval.approvalId);
    let card = approvalCards.get(id);
    const keepActions = card && approval.status === "pending" && approval.canDecide ? card.querySelector(".approval-actions") : null;
    if (!card) {
      // focusable from script only: where focus goes when the card asks this reader something
      card = el("section", { class: "approval-card", dataset: { approvalId: id }, tabindex: "-1" });
      approvalCards.set(id, card);
    }
    card.className = "approval-card status-" + (approval.status || "pending");
    card.setAttribute("aria-label", fmt(gettext("Approval request for %(tool)s"), { tool: approval.toolCallName || gettext("tool call") }));

    const status = approval.status || "pending";
    const head = el(
      "div",
      { class: "approval-head" },
      el("span", { class: "badge status-badge status-" + status, text: STATUS_LABELS[status] || status })
    );
    if (status === "pending") {
      head.appendChild(el("span", { class: "approval-who", text: approverText(approval) }));
      if (approval.expiresAt) head.appendChild(el("span", { class: "countdown", role: "timer", "aria-live": "off", dataset: { expires: approval.expiresAt } }));
    } else if (approval.decidedBy) {
      head.appendChild(el("span", { class: "approval-who", text: fmt(gettext("by %(name)s"), { name: approval.decidedBy }) }));
    }

    const parts = [head];
    // After an edit the card says what ran (finalMessage); the change itself is the diff below.
    const what = approval.finalMessage || approval.message;
    if (what) parts.push(el("p", { class: "approval-message", text: what }));
    const unreachable = outOfReachText(approval);
    if (unreachable) parts.push(el("p", { class: "approval-unreachable field-error", text: unreachable }));

    const steps = Array.isArray(approval.steps) ? approval.steps : [];
    if (steps.length > 1) {
      parts.push(
        el(
          "ol",
          { class: "approval-steps", "aria-label": gettext("Steps") },
          ...steps.map((s) => el("li", null, el("code", { text: s.toolCallName || "" }), " ", el("span", { class: "muted", text: displayValue(parseArgs(s.arguments)) })))
        )
      );
    }

    if (status === "modified" || (status === "approved" && approval.finalArguments)) {
      // approval_response: `arguments` are the ones that run, `requestedArguments` the model's
      const requested = parseArgs(approval.requestedArguments || approval.arguments);
      const final = parseArgs(approval.finalArguments || requested);
      const changes = diffArgs(requested, final);
      const schema = approval.argumentsSchema;
      if (changes.length) {
        const mineEdit = approval.decidedBy === config.username;
        parts.push(
          el("p", { class: "approval-diff-label", text: mineEdit ? gettext("You changed this before approving:") : approval.decidedBy ? fmt(gettext("%(name)s changed this before approving:"), { name: approval.decidedBy }) : gettext("The reviewer changed this before approving:") }),
          el(
            "ul",
            { class: "approval-diff", "aria-label": gettext("Changed arguments") },
            ...changes.map((c) =>
              el(
                "li",
                null,
                // the field by the label the server gave (our own tools', in the reader's language)
                el("span", { class: "diff-field", text: (approval.argumentLabels || {})[c.field] || c.field.replace(/_/g, " ") }),
                ": ",
                el("del", { text: formatArg(c.field, c.from, requested, schema) }),
                " → ",
                el("ins", { text: formatArg(c.field, c.to, final, schema) })
              )
            )
          )
        );
      }
    }
    if ((status === "rejected" || status === "responded") && approval.feedback) {
      parts.push(el("blockquote", { class: "approval-feedback", text: approval.feedback }));
    } else if (approval.feedback && status !== "pending" && !(status === "cancelled" && approval.decidedBy === config.username)) {
      parts.push(el("p", { class: "approval-note muted", text: fmt(gettext("Note: %(note)s"), { note: approval.feedback }) }));
    }

    if (status === "pending" && approval.canDecide) {
      parts.push(keepActions || buildActions(approval));
    }

    const focusInside = card.contains(document.activeElement) && document.activeElement !== card;
    card.replaceChildren(...parts);
    // the control that had focus went with the old content: the card keeps it (updateComposer may
    // pass it on to the composer)
    if (focusInside && !card.contains(document.activeElement)) parkFocus(card);

    // Place it inside its tool card, or at the end of the conversation.
    const tool = toolCards.get(String(approval.toolCallId));
    if (tool) decorateCard(tool, approval);
    const slot = tool ? tool.el.querySelector(".approval-slot") : orphanEl;
    if (card.parentNode !== slot) slot.appendChild(card);
    tickCountdowns();
  }

  /* The tool card of an approval: its title says what (finally) runs, its arguments are the ones
     that run (the model's request stays in the diff), its badge says whether it still waits. */
  function decorateCard(card, approval) {
    const what = approval.finalMessage || approval.message;
    V.set(card.titleEl, what || "");
    card.titleEl.hidden = !what;
    card.el.classList.toggle("has-title", !!what);
    const edited = approval.finalArguments && diffArgs(approval.requestedArguments || approval.arguments, approval.finalArguments).length;
    // the arguments as the call was asked (validated: what runs, defaults filled in, an address as it is
    // sent), not the model's streamed text, which showed "bob@EXAMPLE.COM" or left a default out
    const asked = approval.requestedArguments || approval.arguments;
    card.shownArgs = !!(edited || asked);  // the streamed text no longer replaces them
    if (edited) {
      V.set(card.argsEl, prettyJSON(JSON.stringify(parseArgs(approval.finalArguments))));
      card.argsLabel.textContent = gettext("Arguments, as approved");
    } else {
      card.argsLabel.textContent = gettext("Arguments");
      if (asked) V.set(card.argsEl, prettyJSON(JSON.stringify(parseArgs(asked))));
      else if (card.argsText) V.set(card.argsEl, prettyJSON(card.argsText));
    }
    const status = approval.status || "pending";
    if (status === "pending") setCardStatus(card, "waiting");
    else if (!outcomes.has(String(approval.toolCallId))) {
      // decided, not settled yet: rejected/expired/cancelled calls never run
      const map = { rejected: "rejected", responded: "responded", expired: "expired", cancelled: "cancelled" };
      setCardStatus(card, map[status] || null);
    }
  }

  function buildActions(approval) {
    const id = String(approval.approvalId);
    const errorId = "approval-error-" + id;
    const errorBox = el("div", { id: errorId, class: "approval-error field-error", role: "alert", hidden: true });
    const editorId = "edit-" + id;
    const feedbackId = "feedback-" + id;

    const editText = el("textarea", { id: editorId, class: "mono", rows: 6, spellcheck: "false" });
    editText.value = prettyJSON(typeof approval.arguments === "string" ? approval.arguments : JSON.stringify(approval.arguments || {}));
    const editBox = el(
      "div",
      { class: "approval-editor", hidden: true },
      el("label", { for: editorId, text: gettext("Arguments (JSON)") }),
      editText,
      el("div", { class: "btn-row" },
        el("button", { type: "button", class: "btn btn-primary btn-small", dataset: { act: "approve-edits" }, text: gettext("Approve with edits") }),
        el("button", { type: "button", class: "btn btn-small btn-quiet", dataset: { act: "cancel" }, text: gettext("Cancel") }))
    );

    const feedbackText = el("textarea", { id: feedbackId, rows: 3, placeholder: gettext("Tell the agent why (optional)") });
    const rejectBox = el(
      "div",
      { class: "approval-editor", hidden: true },
      el("label", { for: feedbackId, text: gettext("Feedback for the agent (optional)") }),
      feedbackText,
      el("div", { class: "btn-row" },
        el("button", { type: "button", class: "btn btn-danger btn-small", dataset: { act: "confirm-reject" }, text: gettext("Reject") }),
        el("button", { type: "button", class: "btn btn-small btn-quiet", dataset: { act: "cancel" }, text: gettext("Cancel") }))
    );

    // only the answers this tool's policy offers (allowedDecisions); the server refuses the others too
    const allowed = new Set(approval.allowedDecisions || ["approve", "edit", "reject"]);
    const guidanceId = "guidance-" + id;
    const guidanceText = el("textarea", { id: guidanceId, rows: 3, placeholder: gettext("What should the assistant do instead?") });
    const respondBox = el(
      "div",
      { class: "approval-editor", hidden: true },
      el("label", { for: guidanceId, text: gettext("Your guidance for the assistant (it does not run this)") }),
      guidanceText,
      el("div", { class: "btn-row" },
        el("button", { type: "button", class: "btn btn-primary btn-small", dataset: { act: "confirm-respond" }, text: gettext("Send guidance") }),
        el("button", { type: "button", class: "btn btn-small btn-quiet", dataset: { act: "cancel" }, text: gettext("Cancel") }))
    );
    const buttons = el(
      "div",
      { class: "btn-row approval-buttons" },
      allowed.has("approve") ? el("button", { type: "button", class: "btn btn-primary btn-small", dataset: { act: "approve" }, text: gettext("Approve") }) : null,
      allowed.has("edit") ? el("button", { type: "button", class: "btn btn-small", dataset: { act: "edit" }, text: gettext("Edit"), "aria-expanded": "false", "aria-controls": editorId }) : null,
      allowed.has("reject") ? el("button", { type: "button", class: "btn btn-danger btn-small", dataset: { act: "reject" }, text: gettext("Reject"), "aria-expanded": "false", "aria-controls": feedbackId }) : null,
      allowed.has("respond") ? el("button", { type: "button", class: "btn btn-small", dataset: { act: "respond" }, text: gettext("Answer instead"), "aria-expanded": "false", "aria-controls": guidanceId }) : null
    );

    // "Always allow in this thread": only the requester's own confirmations can be waived (the
    // approval engine refuses it for a group's request); revocable from the grants bar.
    const allowInput = el("input", { type: "checkbox", id: "allow-" + id });
    const allowBox = approval.approver && approval.approver.kind === "requester" && allowed.has("approve")
      ? el("label", { class: "allow-always", for: "allow-" + id }, allowInput, " ",
          fmt(gettext("Always allow %(tool)s in this thread"), { tool: approval.toolCallName || gettext("this tool") }))
      : null;
    const box = el("div", { class: "approval-actions" }, buttons, allowBox, allowed.has("edit") ? editBox : null,
      allowed.has("reject") ? rejectBox : null, allowed.has("respond") ? respondBox : null, errorBox);

    const fields = [editText, feedbackText, guidanceText];
    // `field`: the text box the error is about, marked invalid and described by it
    const showError = (lines, field) => {
      errorBox.replaceChildren(...lines.map((line) => el("div", { text: line })));
      errorBox.hidden = !lines.length;
      for (const area of fields) {
        if (area === field && lines.length) {
          area.setAttribute("aria-invalid", "true");
          area.setAttribute("aria-describedby", errorId);
        } else {
          area.removeAttribute("aria-invalid");
          area.removeAttribute("aria-describedby");
        }
      }
    };
    const setBusy = (busy) => {
      for (const b of box.querySelectorAll("button")) b.disabled = busy;
    };
    const decide = async (payload) => {
      showError([]);
      const hadFocus = box.contains(document.activeElement);
      setBusy(true);
      const always = !!(allowBox && allowInput.checked && payload.decision === "approve");
      if (always) payload = Object.assign({}, payload, { always_allow_in_thread: true });
      try {
        const res = await postJSON("/api/approvals/" + encodeURIComponent(id) + "/decide/", payload);
        if (res.ok) {
          if (always) document.dispatchEvent(new CustomEvent("agui:grants-changed"));
          const current = approvals.get(id) || approval;
          const merged = Object.assign({}, current, pickApprovalFields(res.data));
          merged.canDecide = merged.status === "pending" ? current.canDecide : false;
          upsertApproval(merged, true);
          // the buttons went with the decision: on to the composer, or the request still waiting
          if (hadFocus && !canHoldFocus(document.activeElement)) placeFocus();
          return;
        }
        if (res.status === 409) {
          showError([gettext("This request was already decided; waiting for the update…")]);
          return;
        }
        const lines = [];
        const data = res.data || {};
        if (data.arguments && typeof data.arguments === "object") {
          const labels = data.labels && typeof data.labels === "object" ? data.labels : {};
          for (const [field, errs] of Object.entries(data.arguments)) {
            lines.push(fmt(gettext("%(field)s: %(errors)s"), { field: typeof labels[field] === "string" ? labels[field] : field,
              errors: Array.isArray(errs) ? errs.join(" ") : displayValue(errs) }));
          }
        }
        if (data.feedback) lines.push(fmt(gettext("feedback: %(errors)s"), { errors: Array.isArray(data.feedback) ? data.feedback.join(" ") : displayValue(data.feedback) }));
        if (!lines.length) lines.push(errorText(data, res.status));
        const about = payload.arguments && data.arguments ? editText : data.feedback
          ? (payload.decision === "respond" ? guidanceText : feedbackText) : null;
        showError(lines, about);
        setBusy(false);
      } catch (e) {
        showError([fmt(gettext("Network error: %(error)s"), { error: e.message })]);
        setBusy(false);
      }
    };

    const toggles = [["edit", editBox, editText], ["reject", rejectBox, feedbackText], ["respond", respondBox, guidanceText]];
    const open = (which) => {
      for (const [name, panel, field] of toggles) {
        const show = name === which && panel.hidden;
        panel.hidden = !show;
        buttons.querySelector('[data-act="' + name + '"]')?.setAttribute("aria-expanded", String(show));
        if (show) field.focus();
      }
    };
    /* Cancel or Escape: the open panel closes and focus goes back to the button that opened it
       (the panel, and the focus in it, are hidden). */
    const closePanel = () => {
      const openPanel = toggles.find(([, panel]) => !panel.hidden);
      open(null);
      showError([]);
      if (openPanel) buttons.querySelector('[data-act="' + openPanel[0] + '"]')?.focus();
    };
    box.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || event.isComposing) return;
      if (!toggles.some(([, panel]) => !panel.hidden && panel.contains(event.target))) return;
      event.preventDefault();
      closePanel();
    });

    box.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-act]");
      if (!button || button.disabled) return;
      const act = button.dataset.act;
      if (act === "approve") {
        decide({ decision: "approve" });
      } else if (act === "edit" || act === "reject" || act === "respond") {
        open(act);
      } else if (act === "cancel") {
        closePanel();
      } else if (act === "approve-edits") {
        let args;
        try {
          args = JSON.parse(editText.value);
        } catch (e) {
          showError([window.aguiJSONProblem(editText.value)], editText);
          return;
        }
        if (!args || typeof args !== "object" || Array.isArray(args)) {
          showError([gettext("The arguments must be a JSON object.")], editText);
          return;
        }
        decide({ decision: "approve", arguments: args });
      } else if (act === "confirm-reject") {
        const feedback = feedbackText.value.trim();
        decide(feedback ? { decision: "reject", feedback } : { decision: "reject" });
      } else if (act === "confirm-respond") {
        const feedback = guidanceText.value.trim();
        if (!feedback) {
          showError([gettext("Write your guidance first: the assistant reads it instead of running this.")], guidanceText);
          guidanceText.focus();
          return;
        }
        decide({ decision: "respond", feedback });
      }
    });
    return box;
  }

  /* Map a REST approval (camelCase or snake_case) onto the socket's Approval shape. */
  function pickApprovalFields(data) {
    const out = {};
    if (!data || typeof data !== "object") return out;
    const map = {
      status: "status",
      feedback: "feedback",
      finalArguments: "finalArguments",
      final_arguments: "finalArguments",
      decidedBy: "decidedBy",
      decided_by: "decidedBy",
    };
    for (const [from, to] of Object.entries(map)) {
      if (data[from] !== undefined && data[from] !== null) out[to] = data[from];
    }
    return out;
  }

  /* `live`: a decision that happens now (its event, or this reader's own answer), said aloud once;
     the list a (re)connect brings is history. */
  function upsertApproval(approval, live) {
    if (!approval || approval.approvalId === undefined) return;
    const id = String(approval.approvalId);
    const known = approvals.get(id);
    // Statuses only leave "pending": a replayed approval_request never undoes a decision.
    if (known && known.status && known.status !== "pending" && (approval.status || "pending") === "pending") return;
    approvals.set(id, approval);
    aguiChat.approvals[id] = approval;
    mutate(() => renderApproval(approval));
    const status = approval.status || "pending";
    if (live && (!known || (known.status || "pending") === "pending")) {
      // this reader's own Withdraw is said once, by the run's status ("Withdrawn: nothing waits any more.")
      const ownWithdrawal = status === "cancelled" && withdrawn.has(id);
      if (status !== "pending" && !ownWithdrawal) announce(outcomeSentence(approval));
      // it became unreachable while it waited (one that starts so is said by the waiting status)
      else if (known && !known.outOfReach && approval.outOfReach) announce(outOfReachText(approval));
    }
    updateComposer();
  }

  /* ------------------------------------------------------------------ composer */

  function blockingApproval() {
    for (const a of approvals.values()) {
      if (a.status === "pending" && a.canDecide && a.approver && a.approver.kind === "requester") return a;
    }
    return null;
  }

  function pendingApprovals() {
    return Array.from(approvals.values()).filter((a) => (a.status || "pending") === "pending");
  }

  /* What Stop would cancel: the streaming run, or the paused run whose requests still wait. */
  function stopTarget() {
    if (run.active && run.id) return run.id;
    const waiting = pendingApprovals().find((a) => a.runId);
    return waiting ? String(waiting.runId) : null;
  }

  function agentTitle() {
    const a = agents.find((x) => x.name === (heading && heading.dataset.agent));
    return (a && a.title) || gettext("the assistant");
  }

  function quoted(approval) {
    const what = approval.finalMessage || approval.message || approval.toolCallName || gettext("a request");
    return "\u201c" + (what.length > 90 ? what.slice(0, 88) + "…" : what) + "\u201d";
  }

  /* Who the conversation waits for: {kind: "you" | "question" | "others", approval?, text}. */
  function waitingFor() {
    const mine = blockingApproval();
    // the card with its countdown is right above: a short line, so the buttons stay in view on a phone
    if (mine) return { kind: "you", approval: mine, text: gettext("Waiting for you: approve or reject the request above.") };
    if (Array.from(questions.values()).some((st) => st === "pending")) {
      return { kind: "question", text: gettext("Waiting for your answer to the question above.") };
    }
    const other = pendingApprovals()[0];
    if (other) {
      const approver = other.approver || {};
      const who = approver.kind === "group" ? approver.group || gettext("a reviewer") : gettext("the requester");
      const text = outOfReachText(other) || fmt(gettext("Waiting for %(who)s to decide on %(what)s."), { who, what: quoted(other) });
      return { kind: "others", approval: other, who, text };
    }
    return null;
  }

  const stateSince = $("chat-state-since");
  const stateUntil = $("chat-state-until");

  /* Focus the page took away (its control disabled, hidden or rebuilt) goes somewhere useful rather
     than to <body>: the composer when it takes text, else what the conversation waits for. */
  let parked = null; // a card given focus while the composer was off: the composer takes it back
  function canHoldFocus(node) {
    return !!node && node !== document.body && node.isConnected && !node.disabled && !node.closest("[hidden]");
  }
  function parkFocus(node) {
    node.focus();
    parked = node;
  }
  function waitingTarget(waiting) {
    if (!waiting) return null;
    if (waiting.approval) return approvalCards.get(String(waiting.approval.approvalId)) || null;
    const question = messagesEl.querySelector(".question-card.status-pending");
    return question ? question.querySelector("input, select, textarea, button") : null;
  }
  function placeFocus(waiting) {
    if (!composer.disabled) {
      parked = null;
      composer.focus();
      return;
    }
    const target = waitingTarget(waiting === undefined ? (run.active ? null : waitingFor()) : waiting);
    if (target) parkFocus(target);
  }

  function updateComposer() {
    const waiting = run.active ? null : waitingFor();
    const blocked = !!waiting;
    const focused = document.activeElement;
    const fromComposer = composerForm.contains(focused); // the text box, Send, Stop / Withdraw
    composer.disabled = blocked;
    sendButton.disabled = blocked || sending || run.active;
    document.body.dataset.chatState = run.active ? "running" : waiting ? "waiting-" + waiting.kind : "idle";
    if (waiting) {
      setRunStatus("paused", waiting.text);
      const a = waiting.approval;
      if (stateSince) {
        stateSince.hidden = !(a && a.createdAt);
        const asked = a && a.createdAt ? fmt(gettext("asked %(when)s"), { when: when(a.createdAt) }) : "";
        if (asked && stateSince.textContent !== asked) { // rewritten, the polite status would say it again
          stateSince.setAttribute("datetime", a.createdAt);
          stateSince.textContent = asked;
          stateSince.title = whenTitle(a.createdAt);
        }
      }
      if (stateUntil) {
        stateUntil.hidden = !(a && a.expiresAt) || waiting.kind === "you";
        if (stateUntil.hidden) {
          stateUntil.textContent = "";
          delete stateUntil.dataset.expires;
        } else {
          stateUntil.dataset.expires = a.expiresAt;
          stateUntil.dataset.prefix = fmt(gettext("decision due by %(when)s"), { when: when(a.expiresAt) });
          stateUntil.title = whenTitle(a.expiresAt);
        }
      }
      composer.placeholder = waiting.kind === "others"
        ? fmt(gettext("You can write again after a decision by %(who)s."), { who: waiting.who })
        : waiting.kind === "you" ? gettext("Decide on the request above to continue.") : gettext("Answer the question above to continue.");
    } else {
      for (const node of [stateSince, stateUntil]) {
        if (!node) continue;
        node.hidden = true;
        node.textContent = "";
        delete node.dataset.expires; // tickCountdowns leaves it alone
      }
      if (runStatus.dataset.state === "paused") setRunStatus("idle");
      composer.placeholder = placeholder;
    }
    composerNote.textContent = lengthNote();
    if (stopButton) {
      const target = stopTarget();
      stopButton.hidden = !target;
      stopButton.disabled = run.stopping;
      stopButton.textContent = run.stopping ? gettext("Stopping…") : run.active ? gettext("Stop") : gettext("Withdraw");
      stopButton.title = run.active ? gettext("Stop the assistant") : gettext("Withdraw the waiting request");
      // what Withdraw does, in words on the page: a title is never shown on a touch screen, and next to
      // Send in a bank's chat "Withdraw" read as taking money out
      let note = $("withdraw-note");
      const withdrawing = Boolean(target) && !run.active;
      if (withdrawing && !note) {
        note = el("p", { class: "composer-note withdraw-note", id: "withdraw-note" });
        composerNote.insertAdjacentElement("afterend", note);
        stopButton.setAttribute("aria-describedby", "withdraw-note");
      }
      if (note) {
        note.hidden = !withdrawing;
        note.textContent = !withdrawing ? "" : waiting && waiting.kind === "others"
          ? fmt(gettext("Withdraw takes your request back from %(who)s before they decide: it will not run."), { who: waiting.who })
          : gettext("Withdraw takes the waiting request back: it will not run.");
      }
    }
    if (startersEl) startersEl.hidden = !!messagesEl.querySelector(".msg") || !startersEl.childElementCount;
    tickCountdowns();
    if (fromComposer && !canHoldFocus(focused)) placeFocus(waiting);
    else if (parked && !composer.disabled && (document.activeElement === parked ||
      (!canHoldFocus(parked) && !canHoldFocus(document.activeElement)))) placeFocus(waiting);
  }

  async function stopRun() {
    const target = stopTarget();
    if (!target || run.stopping) return;
    run.stopping = true;
    run.withdrawing = !run.active; // Stop on a paused run takes its waiting requests back
    const taking = run.withdrawing ? [...approvals].filter(([, a]) => (a.status || "pending") === "pending").map(([id]) => id) : [];
    for (const id of taking) withdrawn.add(id);
    updateComposer();
    // a refusal says the Stop did not happen (a 503 alone read "try again in a moment": of what?)
    const failed = (error) => showNotice(run.withdrawing
      ? fmt(gettext("Could not withdraw the waiting request: %(error)s"), { error })
      : fmt(gettext("Could not stop the run: %(error)s"), { error }));
    try {
      const res = await postJSON("/api/runs/" + encodeURIComponent(target) + "/cancel/", {});
      if (!res.ok && res.status !== 409) failed(errorText(res.data, res.status));
      // a decision came first and the run goes on: said, not taken as stopped
      if (res.status === 409 && res.data && res.data.code === "decided_first") showNotice(errorText(res.data, 409));
      // 202: RUN_FINISHED (cancelled) follows on the socket; 409: the run had already ended.
      if (!res.ok) {
        run.stopping = false;
        for (const id of taking) withdrawn.delete(id);
      }
    } catch (e) {
      run.stopping = false;
      for (const id of taking) withdrawn.delete(id);
      failed(e.message);
    }
    updateComposer();
  }

  /* A Stop cut the streaming run short: its reply says so, its unfinished tool calls too. */
  function markRunStopped() {
    for (const key of run.textIds || []) {
      const article = msgEls.get(key);
      if (!article) continue;
      msgInfo.set(key, Object.assign({}, msgInfo.get(key), { stopped: true }));
      markStopped(article);
    }
    for (const [key, card] of toolCards) {
      if (!outcomes.has(key) && card.el.classList.contains("streaming")) setCardStatus(card, "stopped");
    }
  }

  function endStreaming() {
    for (const article of messagesEl.querySelectorAll(".msg.streaming")) article.classList.remove("streaming");
    for (const card of messagesEl.querySelectorAll(".tool-card.streaming")) card.classList.remove("streaming");
    openText.clear();
    openCalls.clear();
  }

  /* The support workflow's trail: each agent of the case once in order ("Triage ✓ → Refunds ●"),
     then how the case ends ("Case closed"). Built from the workflow's path on (re)connect and
     from STEP_STARTED live; a name repeated in a row is the same step continuing. */
  const workflow = { state: null, caseNo: null };
  const participantTitles = {};
  for (const a of agents) {
    for (const p of (a.workflow && a.workflow.agents) || []) participantTitles[p.name] = p.title || p.name;
  }

  function pushStep(name) {
    const last = steps[steps.length - 1];
    for (const s of steps) s.done = true;
    if (last && last.name === name) last.done = false;
    else steps.push({ name, done: false });
  }

  function workflowFromSnapshot(value) {
    steps.length = 0;
    for (const name of value.path || []) pushStep(String(name));
    const running = value.state === "in_progress" || value.state === "pending_requests";
    for (const s of steps) s.done = true;
    if (running && steps.length) steps[steps.length - 1].done = false;
    workflow.state = value.state || null;
    workflow.caseNo = value.case;
    renderSteps();
  }

  const CASE_END = { completed: gettext("Case closed"), cancelled: gettext("Case cancelled"), failed: gettext("Case failed") };

  function renderSteps() {
    if (!stepTrail) return;
    const ended = CASE_END[workflow.state];
    if (ended) for (const s of steps) s.done = true;
    // paused on a question or a review: the step that asked is still the current one
    if (!ended && steps.length && (workflow.state === "pending_requests" || workflow.state === "in_progress")) {
      steps[steps.length - 1].done = false;
    }
    const items = steps.map((step, i) =>
      el(
        "li",
        { class: "step " + (step.done ? "step-done" : "step-active"), "aria-current": step.done ? null : "step", title: step.done ? gettext("finished") : gettext("working on it") },
        i ? el("span", { class: "step-sep", "aria-hidden": "true", text: " → " }) : null,
        el("span", { class: "step-name", text: participantTitles[step.name] || step.name })
      )
    );
    if (ended && steps.length) {
      items.push(el("li", { class: "step step-end step-end-" + workflow.state },
        el("span", { class: "step-sep", "aria-hidden": "true", text: " → " }),
        el("span", { class: "step-name", text: ended })));
    }
    stepTrail.replaceChildren(...items);
    stepTrail.hidden = !steps.length;
  }

  function showNotice(text) {
    V.set(noticeText, text);
    notice.hidden = false;
  }

  function showRunError(runId, message) {
    run.failedId = runId;
    setRunStatus("idle");
    V.set(runErrorText, message || gettext("The run failed."));
    runError.hidden = false;
  }

  function hideBanners() {
    notice.hidden = true;
    runError.hidden = true;
  }

  /* A chat "New chat" made, refused its first message at the account's hourly run limit, holds nothing:
     it is deleted rather than left in the list, and this page stays a new chat of the same agent, the
     text in the composer. Its next Send makes the chat anew with that message (sendAnew). The server
     keeps nothing of a refused start either (services.within_hourly_runs), so this is all there was. */
  let discarded = false;
  const subtitle = document.querySelector(".chat-subtitle"); // a title: renamed, so it holds something

  function holdsNothing() {
    return !messagesEl.querySelector(".msg") && !approvals.size && !questions.size && !run.active &&
      !(aguiChat.stateMeta && aguiChat.stateMeta.version) && !(subtitle && subtitle.textContent.trim());
  }

  async function discardEmptyChat() {
    // the server's word that nothing is in it, not only this page's (another tab may have written)
    const held = await window.aguiFetch("/api/threads/" + encodeURIComponent(threadId) + "/messages/", {
      credentials: "same-origin", headers: { Accept: "application/json" } });
    const messages = held.ok ? await window.aguiJSON(held).catch(() => null) : null;
    if (!Array.isArray(messages) || messages.length) return;
    const res = await postJSON("/api/threads/" + encodeURIComponent(threadId) + "/", undefined, "DELETE");
    if (!res.ok && res.status !== 404) return;
    discarded = true;
    const ws = aguiChat.ws;
    aguiChat.ws = null; // its close is not a loss to reconnect from
    clearTimeout(reconnectTimer);
    reconnectTimer = null;
    config.wsPath = null;
    if (ws) ws.close();
    document.body.dataset.wsState = "closed";
    if (connStatus) connStatus.textContent = "";
    if (window.aguiThreads) window.aguiThreads.forget(threadId);
    draftName = "chat.new." + (heading && heading.dataset.agent);
    keepComposer();
    history.replaceState(null, "", "/chat/");
  }

  function refusedAtLimit(res) {
    return res.status === 429 && res.data && res.data.code === "too_many_runs";
  }

  async function sendAnew(text) {
    hideBanners();
    sending = true;
    updateComposer();
    const keep = (sentence) => {
      if (!composer.value) composer.value = text;
      keepComposer();
      showNotice(sentence);
      return false;
    };
    try {
      const made = await postJSON("/api/threads/", { agent: heading && heading.dataset.agent });
      if (!(made.ok && made.data && made.data.id !== undefined)) return keep(errorText(made.data, made.status));
      const id = String(made.data.id);
      const res = await postJSON("/api/threads/" + encodeURIComponent(id) + "/messages/", { content: text });
      if (res.ok) {
        if (window.aguiDrafts) window.aguiDrafts.write(draftName, null);
        focusComposerOn(id);
        window.location.assign("/chat/" + encodeURIComponent(id) + "/");
        return true;
      }
      if (refusedAtLimit(res)) await postJSON("/api/threads/" + encodeURIComponent(id) + "/", undefined, "DELETE");
      return keep(errorText(res.data, res.status));
    } catch (e) {
      return keep(fmt(gettext("Could not send the message: %(error)s"), { error: e.message }));
    } finally {
      sending = false;
      updateComposer();
    }
  }

  async function send(text) {
    if (!text || !text.trim() || sending || blockingApproval()) return false;
    if (discarded) return sendAnew(text);
    const first = holdsNothing();
    hideBanners();
    lastUserText = text;
    const bubble = createMessageEl(null, "user");
    bubble.classList.add("pending");
    bubble.querySelector(".msg-body").textContent = text;
    mutate(() => messagesEl.appendChild(bubble));
    scrollToBottom();
    sending = true;
    updateComposer();
    try {
      const res = await postJSON("/api/threads/" + encodeURIComponent(threadId) + "/messages/", { content: text });
      if (res.ok && res.data) {
        const id = res.data.message_id !== undefined ? String(res.data.message_id) : null;
        // The server titles an untitled chat after its first message; show that in the list too.
        if (window.aguiThreads) window.aguiThreads.titleIfUntitled(threadId, text.trim().split("\n")[0].slice(0, 80));
        if (id && msgEls.has(id)) {
          bubble.remove(); // already rendered from a snapshot
        } else {
          bubble.classList.remove("pending");
          if (id) {
            bubble.dataset.messageId = id;
            msgEls.set(id, bubble);
            msgText.set(id, text);
            applyInfo(bubble, true);
          }
        }
        keepComposer(); // sent: the draft is what was typed since, if anything
        return true;
      }
      bubble.remove();
      if (!composer.value) composer.value = text;
      if (first && refusedAtLimit(res)) await discardEmptyChat().catch(() => {});
      keepComposer();
      showNotice(errorText(res.data, res.status));
      return false;
    } catch (e) {
      bubble.remove();
      if (!composer.value) composer.value = text;
      keepComposer();
      showNotice(fmt(gettext("Could not send the message: %(error)s"), { error: e.message }));
      return false;
    } finally {
      sending = false;
      updateComposer();
    }
  }

  /* The server takes a message of at most maxChars characters: code points, after trimming, as the
     API counts them. The composer has no maxlength: that counts UTF-16 units (an emoji two) and cut
     text the server takes without a word. Past the limit the note says by how much, and Send waits. */
  const maxChars = Number(composer.dataset.maxChars) || 0;
  function charsOver() {
    const count = maxChars ? Array.from(composer.value.trim()).length : 0;
    return count > maxChars ? count - maxChars : 0;
  }
  function lengthNote() {
    const over = charsOver();
    if (!over) return "";
    const values = { over: new Intl.NumberFormat(LANG).format(over), max: new Intl.NumberFormat(LANG).format(maxChars) };
    return fmt(ngettext("Too long to send: a message may have %(max)s characters. Shorten it by %(over)s character.",
      "Too long to send: a message may have %(max)s characters. Shorten it by %(over)s characters.", over), values);
  }
  composer.addEventListener("input", () => {
    const note = lengthNote();
    if (note || composerNote.dataset.length) composerNote.textContent = note;
    if (note) composerNote.dataset.length = "1";
    else delete composerNote.dataset.length;
  });

  /* What is typed and not yet sent is kept for the tab (drafts.js): a reload, Back, or a sign-in
     after the session lapsed brings it back. It is forgotten once the server has the message. */
  let draftName = "chat." + threadId;
  function keepComposer() {
    if (window.aguiDrafts) window.aguiDrafts.write(draftName, composer.value ? { text: composer.value } : null);
  }
  if (window.aguiDrafts && !composer.value) {
    const kept = window.aguiDrafts.read(draftName);
    if (kept && kept.text) composer.value = kept.text;
  }
  /* What a new chat of this agent held when its first message was refused and the page was then left
     (discardEmptyChat): given to the next chat of that agent that holds nothing, once the snapshot
     says so, and then that chat's own draft. */
  function takeUnsentDraft() {
    const unsent = heading && "chat.new." + heading.dataset.agent;
    if (!window.aguiDrafts || discarded || composer.value || !unsent || !holdsNothing()) return;
    const left = window.aguiDrafts.read(unsent);
    if (!left || !left.text) return;
    composer.value = left.text;
    window.aguiDrafts.write(unsent, null);
    keepComposer();
    updateComposer();
  }
  composer.addEventListener("input", keepComposer);

  composerForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = composer.value;
    if (run.active && text.trim()) {
      composerNote.textContent = gettext("The agent is still answering: wait for it, or press Stop.");
      return;
    }
    if (!text.trim() || sending || blockingApproval()) return;
    if (charsOver()) {
      composerNote.textContent = lengthNote();
      composerNote.dataset.length = "1";
      return;
    }
    composer.value = "";
    send(text);
  });
  composer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      composerForm.requestSubmit ? composerForm.requestSubmit() : composerForm.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });
  if (stopButton) stopButton.addEventListener("click", stopRun);
  if (startersEl) {
    startersEl.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-prompt]");
      if (!button || sending || run.active || waitingFor()) return;
      send(button.dataset.prompt);
    });
  }
  // On a phone the chat list and the state are drawers over the conversation (one scroll area).
  const drawers = [["toggle-chats", "chat-sidebar"], ["toggle-state", "chat-aside"]]
    .map(([buttonId, panelId]) => [$(buttonId), $(panelId)]).filter(([button, panel]) => button && panel);
  // An open drawer is a step in the tab's history: the phone's Back gesture closes it (it left the chat).
  const drawerState = () => Boolean(history.state && history.state.aguiDrawer);
  const setDrawer = (button, panel, open, fromHistory) => {
    if (!fromHistory) {
      if (open && !drawerState()) history.pushState({ aguiDrawer: panel.id }, "");
      else if (!open && drawerState() && panel.classList.contains("drawer-open")) {
        history.back(); // popstate closes it: Forward opens nothing, Back then leaves the chat
        return;
      }
    }
    for (const other of document.querySelectorAll(".drawer-open")) other.classList.remove("drawer-open");
    for (const b of document.querySelectorAll(".phone-toggles button")) b.setAttribute("aria-expanded", "false");
    panel.classList.toggle("drawer-open", open);
    if (open) button.classList.remove("has-news");
    const header = document.querySelector(".chat-header");
    if (header) panel.style.top = Math.round(header.getBoundingClientRect().bottom) + "px"; // CSSOM: allowed by the CSP
    button.setAttribute("aria-expanded", String(open));
    document.body.classList.toggle("drawer-shown", open);
  };
  if (drawerState()) history.replaceState(null, ""); // come back to (Back from a chat opened in it): shut
  window.addEventListener("popstate", () => {
    const shown = drawers.find(([, panel]) => panel.classList.contains("drawer-open"));
    if (shown && !drawerState()) setDrawer(shown[0], shown[1], false, true);
  });
  for (const [button, panel] of drawers) {
    button.addEventListener("click", () => setDrawer(button, panel, !panel.classList.contains("drawer-open")));
  }
  // Escape closes an open drawer, as it closes the chat's other panels, unless something inside
  // (a rename, a delete's confirmation) took the key first; focus goes back to its button when it
  // was in the drawer, which is now hidden.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing || event.defaultPrevented) return;
    const shown = drawers.find(([, panel]) => panel.classList.contains("drawer-open"));
    if (!shown) return;
    const [button, panel] = shown;
    const inside = panel.contains(document.activeElement);
    event.preventDefault();
    setDrawer(button, panel, false);
    if (inside || document.activeElement === document.body) button.focus();
  });
  retryButton.addEventListener("click", async () => {
    if (run.failedId) {
      // The failed run again, on the same history: no second copy of the user's message.
      retryButton.disabled = true;
      const retried = run.failedId;
      try {
        const res = await postJSON("/api/runs/" + encodeURIComponent(retried) + "/retry/", {});
        if (res.ok) {
          // the new run may already have started and failed over the socket: keep its banner
          if (run.failedId === retried) {
            run.failedId = null;
            runError.hidden = true;
          }
        } else {
          showNotice(errorText(res.data, res.status));
        }
      } catch (e) {
        showNotice(fmt(gettext("Could not retry: %(error)s"), { error: e.message }));
      } finally {
        retryButton.disabled = false;
      }
      return;
    }
    let text = lastUserText;
    if (!text) {
      const users = messagesEl.querySelectorAll(".msg-user .msg-body");
      if (users.length) text = users[users.length - 1].textContent;
    }
    if (text) send(text);
  });
  for (const button of document.querySelectorAll("[data-dismiss]")) {
    button.addEventListener("click", () => {
      const target = $(button.dataset.dismiss);
      if (target) target.hidden = true;
    });
  }

  /* ------------------------------------------------------------------ run status */

  function setRunStatus(kind, text) {
    if (kind === "idle") {
      runStatus.hidden = true;
      runStatus.dataset.state = "idle";
      return;
    }
    const same = !runStatus.hidden && runStatus.dataset.state === kind && runStatusText.dataset.said === text;
    runStatus.hidden = false;
    runStatus.dataset.state = kind;
    if (same) return; // the same words rewritten would be read out again (updateComposer runs often)
    runStatusText.dataset.said = text;
    V.set(runStatusText, text);
  }

  /* ------------------------------------------------------------------ announcements */

  /* What a screen reader should hear once: the log stays aria-live off (no streamed token is read),
     and each event that ends something is one sentence here. Each is a node of its own: two in a row
     are both read (a replaced text could cut the first off); the last few are kept. */
  function announce(text) {
    if (!announcer || !text) return;
    announcer.appendChild(el("p", { text }));
    while (announcer.childElementCount > 3) announcer.firstElementChild.remove();
  }

  function excerpt(text, max) {
    const flat = Array.from(String(text || "").replace(/\s+/g, " ").trim()); // code points: no half emoji
    return flat.length > max ? flat.slice(0, max - 1).join("").trimEnd() + "…" : flat.join("");
  }

  /* A reply as the reader sees it (its Markdown rendered), blocks apart. */
  function plainText(markdown) {
    const box = document.createElement("div");
    box.appendChild(window.renderMarkdown ? window.renderMarkdown(markdown) : document.createTextNode(markdown));
    for (const block of box.querySelectorAll("p, li, pre, blockquote, h1, h2, h3, h4, h5, h6, tr, br")) block.after(" ");
    return box.textContent;
  }

  function announceReply(key) {
    const article = msgEls.get(key);
    if (announcedIds.has(key) || snapshotIds.has(key) || !article || !article.classList.contains("msg-assistant")) return;
    const text = excerpt(plainText(msgText.get(key) || ""), 200);
    if (!text) return;
    announcedIds.add(key);
    announce(fmt(gettext("%(agent)s replied: %(text)s"), { agent: agentTitle(), text }));
  }

  /* A request's outcome, in the words of its card; the decider named unless it was this reader. */
  function outcomeSentence(approval) {
    const what = quoted(approval);
    const by = approval.decidedBy && approval.decidedBy !== config.username ? approval.decidedBy : "";
    const values = { what, name: by };
    let sentence;
    switch (approval.status) {
      case "approved":
        sentence = by ? fmt(gettext("Approved by %(name)s: %(what)s."), values) : fmt(gettext("Approved: %(what)s."), values);
        break;
      case "modified":
        sentence = by ? fmt(gettext("Approved with edits by %(name)s: %(what)s."), values) : fmt(gettext("Approved with edits: %(what)s."), values);
        break;
      case "rejected":
        sentence = by ? fmt(gettext("Rejected by %(name)s: %(what)s."), values) : fmt(gettext("Rejected: %(what)s."), values);
        break;
      case "responded":
        sentence = by ? fmt(gettext("Answered with guidance by %(name)s: %(what)s."), values) : fmt(gettext("Answered with guidance: %(what)s."), values);
        break;
      case "expired":
        sentence = fmt(gettext("Expired, nobody decided in time: %(what)s."), values);
        break;
      case "cancelled":
        sentence = by ? fmt(gettext("Withdrawn by %(name)s: %(what)s."), values) : fmt(gettext("Withdrawn: %(what)s."), values);
        break;
      default:
        return "";
    }
    const words = (approval.status === "rejected" || approval.status === "responded") && approval.feedback;
    return words ? fmt(gettext("%(outcome)s Feedback: %(feedback)s"), { outcome: sentence, feedback: excerpt(approval.feedback, 200) }) : sentence;
  }

  /* ------------------------------------------------------------------ events */

  /* A run the server took that no worker has started (every worker busy, or none running: a deployment
     that left out its worker read "answering…" for good): with nothing from the run for QUEUED_CHECK_MS,
     the page asks the run's status and, while it is still queued, says so instead. */
  const QUEUED_CHECK_MS = 6000;
  let queuedTimer = null;

  function watchQueued(runId) {
    clearTimeout(queuedTimer);
    queuedTimer = setTimeout(async () => {
      try {
        const res = await window.aguiFetch("/api/runs/" + encodeURIComponent(runId) + "/", {
          credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" });
        const data = res.ok ? await res.json() : null;
        if (!data || data.status !== "queued" || !run.active || run.id !== runId || queuedTimer === null) return;
        setRunStatus("queued", gettext("Waiting to start: no worker of this service has taken the answer yet. It starts as soon as one does."));
        watchQueued(runId); // and asked again, until the run says something
      } catch (e) {
        /* offline: the socket's own state says so */
      }
    }, QUEUED_CHECK_MS);
  }

  function runMoved(ev) {
    if (ev.type === "RUN_STARTED" || queuedTimer === null) return;
    clearTimeout(queuedTimer);
    queuedTimer = null;
    if (runStatus.dataset.state === "queued") setRunStatus("running", fmt(gettext("%(agent)s is answering…"), { agent: agentTitle() }));
  }

  function handleEvent(ev) {
    if (!ev || typeof ev !== "object") return;
    followSoon();
    aguiChat.events.push(ev);
    runMoved(ev);
    document.dispatchEvent(new CustomEvent("agui:event", { detail: ev })); // for add-ons (chat-questions.js)
    switch (ev.type) {
      case "MESSAGES_SNAPSHOT":
        openText.clear();
        openCalls.clear();
        // The active run, if any, is replayed right after the snapshots from its RUN_STARTED.
        run.active = false;
        setRunStatus("idle");
        renderSnapshot(ev.messages);
        updateComposer();
        break;
      case "STATE_SNAPSHOT":
        setState(ev.snapshot);
        break;
      case "STATE_DELTA":
        try {
          setState(applyPatch(aguiChat.state, ev.delta));
        } catch (e) {
          // Out of sync: keep the last good state until the next snapshot.
          console.warn("STATE_DELTA not applied:", e.message);
        }
        break;
      case "RUN_STARTED":
        runError.hidden = true;
        notice.hidden = true; // "the chat waits on …" is over once a run starts
        run.textIds = [];
        // The server stored the message being sent before it announced the run: whatever the run
        // says goes after that bubble, even when this event beats the POST's response.
        for (const bubble of messagesEl.querySelectorAll(".msg.pending")) bubble.classList.replace("pending", "sent");
        // A message after a closed case starts a new case: a new path of steps.
        if (!ev.parentRunId && CASE_END[workflow.state]) {
          steps.length = 0;
          workflow.state = null;
          renderSteps();
        }
        run.id = ev.runId !== undefined ? String(ev.runId) : null;
        run.active = true;
        run.stopping = false;
        setRunStatus("running", fmt(gettext("%(agent)s is answering…"), { agent: agentTitle() }));
        if (run.id) watchQueued(run.id);
        updateComposer();
        break;
      case "RUN_FINISHED": {
        const outcome = ev.outcome || {};
        const wasStreaming = run.active;
        run.active = false;
        run.stopping = false;
        if (outcome.type === "cancelled") {
          if (wasStreaming) markRunStopped();
          const cut = wasStreaming && (run.textIds || []).length;
          setRunStatus("cancelled", cut ? gettext("You stopped the answer.") : run.withdrawing ? gettext("Withdrawn: nothing waits any more.") : gettext("Stopped."));
          run.withdrawing = false;
        } else setRunStatus("idle"); // waiting on a person: updateComposer says on whom
        endStreaming();
        updateComposer();
        window.aguiThreads?.refresh(); // the chat list says where this chat stands now
        break;
      }
      case "RUN_ERROR":
        run.active = false;
        run.stopping = false;
        showRunError(ev.runId || run.id, ev.message);
        announce(runErrorText.textContent); // live only: the banner a (re)connect restores is history
        endStreaming();
        updateComposer();
        break;
      case "STEP_STARTED":
        pushStep(String(ev.stepName || "step"));
        renderSteps();
        if (run.active) setRunStatus("running", fmt(gettext("%(agent)s is working…"), { agent: participantTitles[ev.stepName] || ev.stepName || gettext("The assistant") }));
        break;
      case "STEP_FINISHED": {
        const step = steps.slice().reverse().find((s) => s.name === String(ev.stepName) && !s.done);
        if (step) step.done = true;
        renderSteps();
        break;
      }
      case "TEXT_MESSAGE_START": {
        const key = String(ev.messageId);
        openText.add(key);
        const article = ensureMessage(key, ev.role || "assistant");
        applyInfo(article, true);
        if (run.textIds) run.textIds.push(key);
        setMessageText(key, "", true);
        article.querySelector(".msg-body").hidden = false;
        break;
      }
      case "TEXT_MESSAGE_CONTENT": {
        const key = String(ev.messageId);
        if (msgEls.has(key) && !openText.has(key)) break; // already complete in the snapshot
        if (!msgEls.has(key)) {
          ensureMessage(key, "assistant");
          openText.add(key);
        }
        setMessageText(key, (msgText.get(key) || "") + (ev.delta || ""), true);
        break;
      }
      case "TEXT_MESSAGE_END": {
        const key = String(ev.messageId);
        openText.delete(key);
        const article = msgEls.get(key);
        if (article) article.classList.remove("streaming");
        scheduleRender(key);
        announceReply(key); // once, complete: the log itself reads none of the tokens
        break;
      }
      case "TOOL_CALL_START": {
        const key = String(ev.toolCallId);
        openCalls.add(key);
        mutate(() => {
          const card = ensureToolCard(key, ev.toolCallName, ev.parentMessageId);
          setToolArgs(card, "", false); // a replayed call streams its arguments again
        });
        break;
      }
      case "TOOL_CALL_ARGS": {
        const key = String(ev.toolCallId);
        if (toolCards.has(key) && !openCalls.has(key)) break; // already complete in the snapshot
        openCalls.add(key);
        const card = toolCards.get(key) || ensureToolCard(key, "", null);
        mutate(() => setToolArgs(card, card.argsText + (ev.delta || ""), false));
        break;
      }
      case "TOOL_CALL_END": {
        openCalls.delete(String(ev.toolCallId));
        const card = toolCards.get(String(ev.toolCallId));
        if (card) setToolArgs(card, card.argsText, true);
        break;
      }
      case "TOOL_CALL_RESULT":
        mutate(() => setToolResult(ev.toolCallId, ev.content));
        break;
      case "CUSTOM":
        if (ev.name === "approvals") {
          const list = (ev.value && ev.value.approvals) || [];
          for (const a of list) upsertApproval(a);
          updateComposer(); // after a (re)connect: who the conversation waits for
          takeUnsentDraft();
        } else if (ev.name === "run_error") {
          // on (re)connect: the thread's latest run failed (its RUN_ERROR may be long gone)
          if (!run.active && ev.value) showRunError(ev.value.runId, ev.value.message);
        } else if (ev.name === "approval_request" || ev.name === "approval_response") {
          upsertApproval(ev.value, true);
          if (ev.name === "approval_response") {
            notice.hidden = true;
            window.aguiThreads?.refresh();
          }
        } else if (ev.name === "tool_outcome") {
          mutate(() => setOutcome(ev.value));
        } else if (ev.name === "tool_outcomes") {
          mutate(() => ((ev.value && ev.value.outcomes) || []).forEach(setOutcome));
        } else if (ev.name === "message_info") {
          for (const [id, info] of Object.entries((ev.value && ev.value.messages) || {})) msgInfo.set(String(id), info);
          for (const article of msgEls.values()) applyInfo(article);
        } else if (ev.name === "request_info" || ev.name === "request_info_response") {
          if (ev.value && ev.value.requestId !== undefined) questions.set(String(ev.value.requestId), ev.value.status);
          if (ev.name === "request_info_response") notice.hidden = true;
          updateComposer();
        } else if (ev.name === "input_requests") {
          for (const q of (ev.value && ev.value.requests) || []) questions.set(String(q.requestId), q.status);
          updateComposer();
        } else if (ev.name === "workflow") {
          workflowFromSnapshot(ev.value || {});
        } else if (ev.name === "status") {
          workflow.state = ev.value && ev.value.state;
          renderSteps();
        } else if (ev.name === "state_version") {
          // {version, provisional: [{key, toolCallId}]}: the base of our next edit, and what is only predicted
          aguiChat.stateMeta = ev.value || { version: 0, provisional: [] };
          setState(aguiChat.state);
        }
        break;
      case "state_ack":
      case "error": // replies to our own state_patch frames (not AG-UI events)
        if (window.aguiStatePanel) window.aguiStatePanel.onReply(ev);
        break;
      default:
        break; // unknown event types are ignored
    }
  }

  /* ------------------------------------------------------------------ socket */

  let attempt = 0;
  let reconnectTimer = null;
  // The stream entry of the last frame received (frames say it: ?positions=1). A socket that
  // replaces a lost one asks for what followed it (?after=): exactly what was missed, once, instead
  // of the snapshots and the live run replayed from its start. A reload starts over (snapshots).
  let streamAt = null;
  let outage = false; // the notice of a 4011 close is shown (hidden by the next socket's first frame)

  function setWsState(value) {
    document.body.dataset.wsState = value;
    if (connStatus) {
      connStatus.textContent = value === "open" ? "" : value === "connecting" ? gettext("Connecting…") : gettext("Reconnecting…");
      connStatus.dataset.state = value;
    }
  }

  function connect() {
    clearTimeout(reconnectTimer);
    reconnectTimer = null;
    if (!config.wsPath) {
      setWsState("closed");
      return;
    }
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + config.wsPath +
      "?positions=1" + (streamAt ? "&after=" + encodeURIComponent(streamAt) : "");
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      scheduleReconnect();
      return;
    }
    aguiChat.ws = ws;
    // gone quiet without closing (net.js): a new socket at once, from where this one left off
    const alive = window.aguiKeepAlive(ws, () => {
      if (aguiChat.ws !== ws) return;
      setWsState("closed");
      attempt = 0;
      connect();
    });
    if (document.body.dataset.wsState !== "open") setWsState("connecting");
    ws.addEventListener("open", () => {
      aguiChat.connects += 1;
      setWsState("open");
    });
    ws.addEventListener("message", (msg) => {
      // A frame (the snapshot comes first) shows the socket works. One closed with 4011 at once
      // (Redis away) sent none, so the backoff keeps growing instead of retrying twice a second.
      attempt = 0;
      alive.heard();
      if (outage) {
        outage = false;
        notice.hidden = true;
      }
      let data;
      try {
        data = JSON.parse(msg.data);
      } catch (e) {
        console.warn("Ignoring a frame that is not JSON");
        return;
      }
      if (data && data.type === "pong") return; // the keep-alive's answer: heard above, nothing to show
      if (data && Array.isArray(data.events)) {
        // {after?, events}: the events, and where they leave this page in the thread's stream
        if (typeof data.after === "string") streamAt = data.after;
        data = data.events;
      }
      for (const ev of Array.isArray(data) ? data : [data]) {
        try {
          handleEvent(ev);
        } catch (e) {
          console.error("Failed to handle event", ev && ev.type, e);
        }
      }
    });
    ws.addEventListener("close", (event) => {
      if (aguiChat.ws !== ws) return;
      setWsState("closed");
      if (event.code === 4401 || event.code === 4403) {
        // Signed out, or not this user's chat: retrying cannot help.
        showNotice(gettext("This chat is not available to you any more; sign in again or open another chat."));
        return;
      }
      // 4011: Redis was away, and what could not be written to the stream meanwhile (a notice) is
      // only in the database: the next socket starts over with the snapshots
      if (event.code === 4011) {
        streamAt = null;
        // said, not only "Reconnecting…": a message sent now is stored and answered once it is back
        outage = true;
        showNotice(gettext("The service is temporarily unavailable. What you send is kept and answered once it is back."));
      }
      scheduleReconnect();
    });
  }

  function scheduleReconnect() {
    if (reconnectTimer) return;
    const base = Math.min(8000, 500 * Math.pow(2, attempt));
    attempt += 1;
    const delay = base / 2 + Math.random() * (base / 2);
    reconnectTimer = setTimeout(connect, delay);
  }

  window.addEventListener("online", () => {
    if (document.body.dataset.wsState !== "open") {
      attempt = 0;
      connect();
    }
  });

  aguiChat.connects = 0; // sockets opened so far (tests watch reconnects)
  aguiChat.setState = setState; // state-panel.js applies the snapshot of a refused edit
  setState({});
  updateComposer();
  if (takeComposerFocus(threadId)) composer.focus();
  setInterval(tickCountdowns, 1000);
  connect();
})();
