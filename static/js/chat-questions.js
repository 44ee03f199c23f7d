/* Questions an agent asks the person (CUSTOM request_info; agents/runtime/inputs.py), as cards in the chat.
 *
 * chat.js re-dispatches every AG-UI event as a DOM "agui:event"; this file listens for
 * request_info (a new question), request_info_response (answered or cancelled) and input_requests
 * (the snapshot on (re)connect). A pending question gets a small form built from its
 * responseSchema (one field per property; enums as a select); the answer goes to
 * POST /api/threads/<id>/answer/ and the paused workflow continues on the server.
 */
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)

  const configEl = document.getElementById("chat-config");
  const config = configEl ? JSON.parse(configEl.textContent || "{}") || {} : {};
  const threadId = config.threadId;
  const messagesEl = document.getElementById("messages");
  if (!threadId || !messagesEl) return;
  const cards = new Map(); // requestId -> {data, node}
  const titles = {}; // a workflow's agents by name: "Refunds asks", not "refund_agent asks"
  for (const a of config.agents || []) {
    titles[a.name] = a.title; // an agent's own question (an MCP server's, asked during its call)
    for (const p of (a.workflow && a.workflow.agents) || []) titles[p.name] = p.title;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") window.aguiVisible.set(node, String(value)); // bidi controls shown, not obeyed
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) if (child) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    return node;
  }

  function csrf() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  async function post(body) {
    const res = await window.aguiFetch("/api/threads/" + encodeURIComponent(threadId) + "/answer/", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await res.json(); } catch (e) { data = {}; }
    return { ok: res.ok, status: res.status, data };
  }

  function labelOf(name, s) {
    const text = (s && s.title) || name.replace(/_/g, " ").replace(/\bid\b/i, "number");
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  /* [{name, label, schema}] for the form; a non-object schema is one unnamed field. */
  function fieldsOf(schema) {
    if (schema && schema.type === "object" && schema.properties) {
      return Object.entries(schema.properties).map(([name, s]) => ({ name, label: labelOf(name, s || {}), schema: s || {} }));
    }
    return [{ name: null, label: gettext("Your answer"), schema: schema || {} }];
  }

  /* What a field expects, in words: the schema's description, or its pattern read aloud (never the
     regex itself); null when there is nothing plain to say. */
  function hintOf(s) {
    if (s.description) return s.description;
    const p = typeof s.pattern === "string" ? s.pattern : "";
    let m;
    if ((m = p.match(/^\^(?:\\d|\[0-9\])\{(\d+),(\d+)\}\$$/))) return fmt(gettext("%(min)s to %(max)s digits"), { min: m[1], max: m[2] });
    if ((m = p.match(/^\^(?:\\d|\[0-9\])\{(\d+)\}\$$/))) return fmt(gettext("%(count)s digits"), { count: m[1] });
    if (/^\^(?:\\d|\[0-9\])\+\$$/.test(p)) return gettext("digits only");
    if ((m = p.match(/^\^\[A-Z\]\{(\d+)\}\$$/))) return fmt(gettext("%(count)s capital letters"), { count: m[1] });
    if (s.minLength && s.maxLength) return fmt(gettext("%(min)s to %(max)s characters"), { min: s.minLength, max: s.maxLength });
    if (s.minLength) return fmt(gettext("at least %(count)s characters"), { count: s.minLength });
    if (s.maxLength) return fmt(gettext("at most %(count)s characters"), { count: s.maxLength });
    if (typeof s.minimum === "number" && typeof s.maximum === "number") return fmt(gettext("a number from %(min)s to %(max)s"), { min: s.minimum, max: s.maximum });
    return null;
  }

  /* The schema's pattern as a RegExp when it is one of the plain shapes hintOf reads aloud (digits,
     capital letters), else null: a pattern comes from a model or an MCP server, and the browser's
     engine backtracks ("^(a+)+$" would hang this tab); the server checks every answer on RE2. */
  function plainPattern(p) {
    if (typeof p !== "string") return null;
    if (!/^\^(?:(?:\\d|\[0-9\])(?:\{\d+(?:,\d+)?\}|\+)|\[A-Z\]\{\d+\})\$$/.test(p)) return null;
    try { return new RegExp(p, "u"); } catch (e) { return null; }
  }

  /* A problem with one field, for the person; null when it fits. */
  function problemOf(field, input) {
    const s = field.schema;
    const raw = input.value.trim();
    if (!raw) return fmt(gettext("%(field)s: please fill this in."), { field: field.label });
    if (s.type === "number" || s.type === "integer") {
      if (!Number.isFinite(Number(raw))) return fmt(gettext("%(field)s: enter a number."), { field: field.label });
      if (s.type === "integer" && !Number.isInteger(Number(raw))) return fmt(gettext("%(field)s: enter a whole number."), { field: field.label });
    }
    const re = plainPattern(s.pattern);
    if (re) {
      if (!re.test(input.value)) {
        const hint = hintOf(s);
        return hint ? fmt(gettext("%(field)s: enter %(hint)s."), { field: field.label, hint })
          : fmt(gettext("%(field)s: this does not look right; check it and try again."), { field: field.label });
      }
    }
    // JSON Schema's lengths count characters (code points), as the server checks them; a string's
    // .length counts UTF-16 units, an emoji two
    const chars = Array.from(input.value).length;
    if (s.minLength && chars < s.minLength) return fmt(gettext("%(field)s: at least %(count)s characters, please."), { field: field.label, count: s.minLength });
    if (s.maxLength && chars > s.maxLength) return fmt(gettext("%(field)s: at most %(count)s characters, please."), { field: field.label, count: s.maxLength });
    return null;
  }

  /* "Order number 12345, shipping preference express": the answer as the person gave it. */
  function answerText(data) {
    const a = data.answer;
    if (a && typeof a === "object" && !Array.isArray(a)) {
      const fields = fieldsOf(data.responseSchema);
      return Object.entries(a).map(([k, v]) => {
        const f = fields.find((x) => x.name === k);
        const shown = typeof v === "string" ? v : typeof v === "boolean" ? (v ? gettext("Yes") : gettext("No")) : JSON.stringify(v);
        return fmt(gettext("%(field)s: %(errors)s"), { field: f ? f.label : k, errors: shown });
      }).join(", ");
    }
    return typeof a === "string" ? a : JSON.stringify(a);
  }

  function inputFor(field, id) {
    const s = field.schema;
    if (s.type === "boolean") { // a yes-or-no question (an MCP server's confirmation)
      return el("select", { id, name: field.name || "answer", "aria-describedby": hintOf(s) ? id + "-hint" : null },
        el("option", { value: "true", text: gettext("Yes") }), el("option", { value: "false", text: gettext("No") }));
    }
    if (Array.isArray(s.enum)) {
      return el("select", { id, name: field.name || "answer" }, ...s.enum.map((v) => el("option", { value: JSON.stringify(v), text: String(v) })));
    }
    const type = s.type === "number" || s.type === "integer" ? "number" : "text";
    const digits = /\\d|\[0-9\]/.test(s.pattern || "") && !/[a-zA-Z]/.test((s.pattern || "").replace(/\\d/g, ""));
    return el("input", { id, type, name: field.name || "answer", autocomplete: "off", required: true,
      inputmode: digits ? "numeric" : null, "aria-describedby": hintOf(s) ? id + "-hint" : null });
  }

  function valueOf(field, input) {
    if (Array.isArray(field.schema.enum)) return JSON.parse(input.value);
    if (field.schema.type === "number" || field.schema.type === "integer") return Number(input.value);
    if (field.schema.type === "boolean") return /^(y|yes|true|1)$/i.test(input.value.trim());
    return input.value;
  }

  /* Inside the request_info call's tool card, like an approval card; else at the end. */
  function place(data, card) {
    const tool = data.toolCallId ? messagesEl.querySelector('.tool-card[data-tool-call-id="' + CSS.escape(String(data.toolCallId)) + '"] .approval-slot') : null;
    (tool || messagesEl).appendChild(card);
  }

  function render(data) {
    const known = cards.get(data.requestId);
    if (known && known.data.status !== "pending" && data.status === "pending") return; // a replay never reopens it
    const card = el("section", {
      class: "approval-card question-card status-" + (data.status === "answered" ? "approved" : data.status),
      "data-request-id": data.requestId, "aria-label": fmt(gettext("Question from %(agent)s"), { agent: titles[data.agent] || data.agent || gettext("the assistant") }),
    });
    card.appendChild(el("div", { class: "approval-head" },
      el("span", { class: "approval-who", text: fmt(gettext("%(agent)s asks"), { agent: titles[data.agent] || data.agent || gettext("The assistant") }) }),
      el("span", { class: "badge " + (data.status === "pending" ? "badge-warn" : "badge-muted"),
        text: { pending: gettext("Waiting for you"), answered: gettext("Answered"), cancelled: gettext("Declined") }[data.status] || data.status })));
    card.appendChild(el("p", { class: "approval-message", text: data.message }));
    if (data.status === "answered") {
      card.appendChild(el("p", { class: "question-answer", text: fmt(gettext("Your answer: %(answer)s"), { answer: answerText(data) }) }));
    } else if (data.status === "cancelled") {
      card.appendChild(el("p", { class: "muted", text: gettext("You declined to answer; the workflow ended.") }));
    } else {
      card.appendChild(form(data));
    }
    if (known && known.node.isConnected) known.node.replaceWith(card);
    else place(data, card); // new, or its old node went with a re-rendered snapshot
    cards.set(data.requestId, { data, node: card });
    if (data.status === "pending" && !(known && known.data.status === "pending")) card.scrollIntoView({ block: "nearest" });
  }

  function form(data) {
    const fields = fieldsOf(data.responseSchema);
    const errorEl = el("p", { class: "approval-error field-error", role: "alert", hidden: true });
    const inputs = fields.map((f, i) => [f, inputFor(f, "q-" + data.requestId + "-" + i)]);
    const submit = el("button", { type: "submit", class: "btn btn-primary", text: gettext("Answer") });
    const cancel = el("button", { type: "button", class: "btn", text: gettext("Decline") });
    const node = el("form", { class: "approval-actions", novalidate: true },
      ...inputs.map(([f, input]) => el("div", { class: "question-field" },
        el("label", { for: input.id, text: f.label }), input,
        hintOf(f.schema) ? el("span", { id: input.id + "-hint", class: "field-hint", text: hintOf(f.schema) }) : null)),
      el("div", {}, submit, " ", cancel), errorEl);
    async function send(body) {
      submit.disabled = cancel.disabled = true;
      errorEl.hidden = true;
      try {
        const res = await post({ request_id: data.requestId, ...body });
        if (res.ok) return render(res.data);
        // the server's words are for programs (they quote the schema): the person gets a sentence
        errorEl.textContent = res.status === 409
          ? gettext("This question was already answered or closed.")
          : res.data && res.data.code === "invalid_payload"
            ? gettext("That answer does not fit what was asked: check it and try again.")
            : gettext("Could not send the answer; try again.");
      } catch (e) {
        errorEl.textContent = fmt(gettext("Could not send the answer: %(error)s"), { error: e.message });
      }
      errorEl.hidden = false;
      submit.disabled = cancel.disabled = false;
    }
    node.addEventListener("submit", (event) => {
      event.preventDefault();
      const problems = inputs.map(([f, input]) => (Array.isArray(f.schema.enum) ? null : problemOf(f, input))).filter(Boolean);
      if (problems.length) {
        errorEl.textContent = problems.join("\n");
        errorEl.hidden = false;
        return;
      }
      let answer;
      if (fields.length === 1 && fields[0].name === null) answer = valueOf(fields[0], inputs[0][1]);
      else answer = Object.fromEntries(inputs.map(([f, input]) => [f.name, valueOf(f, input)]));
      send({ answer });
    });
    cancel.addEventListener("click", () => send({ cancel: true }));
    return node;
  }

  document.addEventListener("agui:event", (event) => {
    const ev = event.detail;
    if (!ev || ev.type !== "CUSTOM") return;
    if (ev.name === "request_info" || ev.name === "request_info_response") render(ev.value);
    else if (ev.name === "input_requests") for (const q of (ev.value && ev.value.requests) || []) render(q);
  });
})();
