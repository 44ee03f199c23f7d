/*
 * rule-builder.js — the policy console's rule builder. It edits the same JSON the engine stores
 * (approvals/rules.py): a list of {name, when, action, route?}; every change is written to the
 * "conditions" textarea, which is what the form submits, so the JSON stays editable by hand
 * ("Load this JSON into the builder" reads it back). A rule nested deeper than the builder shows
 * (all/any of leaves, each optionally negated) is kept as it is and marked "edit as JSON".
 * The server validates; its messages ("rule 2.when.any[0]: ...", in the page's language) are shown on the rule's card.
 */
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)

  const textarea = document.getElementById("p-conditions");
  const root = document.getElementById("rule-builder");
  if (!textarea || !root) return;

  const read = (id, fallback) => {
    const node = document.getElementById(id);
    try {
      return node ? JSON.parse(node.textContent) : fallback;
    } catch (e) {
      return fallback;
    }
  };
  const OPS = read("rule-ops", ["eq"]);
  const ACTIONS = read("rule-actions", ["gate", "deny", "allow"]);
  // the words people read (approvals/console.py); the stored values stay the engine's op and action names
  const ACTION_LABELS = read("rule-action-labels", {});
  const OP_LABELS = read("rule-op-labels", {});
  const GROUPS = read("rule-groups", []);
  const RISKS = ["low", "medium", "high", "critical"];
  // the server's messages begin with their rule in the page's language ("rule 2.when…", "règle 2.when…")
  const RULE_AT_START = new RegExp("^" + read("rule-label", "rule %(number)s")
    .replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace("%\\(number\\)s", "(\\d+)"));

  let model = [];
  let uid = 0;
  /* The builder is the truth and the textarea (what the form sends) its copy, unless the JSON was typed
     into since: Chromium restores the textarea's earlier text on Back after this script built the
     builder from the server's, so the copy is written again before it is shown or sent. */
  let copy = null; // the text the builder stands for (null: the builder could not read the JSON)
  let typed = false;
  function syncRaw() {
    if (copy !== null && !typed) textarea.value = copy;
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "className") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  /* Every change re-renders the list, which destroys the control in use: each control carries a key
     (data-rb: its rule, its condition, its role) by which render() puts focus back on its twin. */
  function keyed(node, key) {
    node.dataset.rb = key;
    return node;
  }

  function field(labelText, input, className) {
    const wrap = el("div", { className: "field " + (className || "") });
    const id = "rb-" + ++uid;
    input.id = id;
    wrap.append(el("label", { for: id }, labelText), input);
    return wrap;
  }

  /* ---------------------------------------------------------------- values */

  function showValue(value) {
    if (typeof value === "string") {
      try {
        JSON.parse(value);
        return JSON.stringify(value); // "1000" stays a string only when quoted
      } catch (e) {
        return value;
      }
    }
    if (Array.isArray(value)) return value.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
    return JSON.stringify(value);
  }

  function parseScalar(text) {
    const t = text.trim();
    try {
      return JSON.parse(t);
    } catch (e) {
      return t;
    }
  }

  function parseValue(text, op) {
    if (op === "in" || op === "not_in") {
      const t = text.trim();
      if (t.startsWith("[")) {
        try {
          const v = JSON.parse(t);
          if (Array.isArray(v)) return v;
        } catch (e) {
          /* a comma list */
        }
      }
      return t === "" ? [] : t.split(",").map(parseScalar);
    }
    if (op === "matches" || op === "glob") return text.trim();
    return parseScalar(text);
  }

  /* ---------------------------------------------------------------- rule <-> builder */

  function isLeaf(c) {
    return c && typeof c === "object" && "path" in c && "op" in c;
  }

  function leafOf(c) {
    if (isLeaf(c)) return { not: false, path: c.path, op: c.op, value: c.value };
    if (c && typeof c === "object" && Object.keys(c).length === 1 && isLeaf(c.not)) {
      return { not: true, path: c.not.path, op: c.not.op, value: c.not.value };
    }
    return null;
  }

  function fromRule(rule) {
    const b = { name: rule.name || "", action: rule.action || "gate", always: !("when" in rule), match: "all", conds: [], raw: null,
                route: rule.route && typeof rule.route === "object" ? { ...rule.route } : {} }; // own keys, no setter
    if (b.always) return b;
    const when = rule.when;
    const single = leafOf(when);
    if (single) {
      b.conds = [single];
      return b;
    }
    const key = when && typeof when === "object" && Object.keys(when).length === 1 ? Object.keys(when)[0] : null;
    if ((key === "all" || key === "any") && Array.isArray(when[key])) {
      const leaves = when[key].map(leafOf);
      if (leaves.every(Boolean)) {
        b.match = key;
        b.conds = leaves;
        return b;
      }
    }
    b.raw = when; // deeper than the builder shows: kept as is
    return b;
  }

  function toRule(b) {
    const rule = {};
    if (b.name) rule.name = b.name;
    if (!b.always) {
      if (b.raw !== null) rule.when = b.raw;
      else {
        const leaves = b.conds.map((c) => {
          const leaf = { path: c.path, op: c.op, value: c.value };
          return c.not ? { not: leaf } : leaf;
        });
        rule.when = leaves.length === 1 && b.match === "all" ? leaves[0] : { [b.match]: leaves };
      }
    }
    rule.action = b.action;
    // a gate rule's route (who decides, approvals, risk, deadline); empty parts are left out
    const route = Object.fromEntries(Object.entries(b.route || {}).filter(([, v]) => v !== "" && v !== null && v !== undefined));
    if (b.action === "gate" && Object.keys(route).length) rule.route = route;
    return rule;
  }

  function routeRow(b, i) {
    const at = "r" + i + ":route-";
    b.route = b.route || {};
    const row = el("div", { className: "rule-route" });
    row.appendChild(el("span", { className: "muted small" }, gettext("Route these calls (empty: the policy's own):")));
    const listId = "rb-groups-" + ++uid;
    const groups = el("datalist", { id: listId });
    for (const g of GROUPS) groups.appendChild(el("option", { value: g }));
    const group = keyed(el("input", { type: "text", list: listId, placeholder: gettext("group") }), at + "group");
    group.value = b.route.group || "";
    const approvals = keyed(el("input", { type: "number", min: 1, max: 20, placeholder: "1" }), at + "approvals");
    approvals.value = b.route.approvals || "";
    const risk = keyed(el("select"), at + "risk");
    risk.appendChild(el("option", { value: "" }, gettext("policy's")));
    const riskWords = { low: gettext("low"), medium: gettext("medium"), high: gettext("high"), critical: gettext("critical") };
    for (const r of RISKS) risk.appendChild(el("option", { value: r }, riskWords[r] || r));
    risk.value = b.route.risk || "";
    const deadline = keyed(el("input", { type: "text", placeholder: gettext("e.g. 15 min") }), at + "deadline");
    deadline.value = b.route.deadline === undefined ? "" : String(b.route.deadline);
    const put = (key, value) => {
      b.route[key] = value;
      sync();
    };
    group.addEventListener("input", () => put("group", group.value.trim()));
    approvals.addEventListener("input", () => put("approvals", approvals.value === "" ? "" : Number(approvals.value)));
    risk.addEventListener("change", () => put("risk", risk.value));
    deadline.addEventListener("input", () => {
      const text = deadline.value.trim();
      put("deadline", /^\d+$/.test(text) ? Number(text) : text);
    });
    // labels unlike the policy's own fields (Risk, Approvals needed): each field is found by its words
    row.append(groups, field(gettext("Decided by"), group), field(gettext("How many approve"), approvals), field(gettext("Treat as"), risk),
               field(gettext("Time to decide"), deadline));
    return row;
  }

  function sync() {
    textarea.value = copy = JSON.stringify(model.map(toRule), null, 2);
    typed = false;
    textarea.dispatchEvent(new Event("change", { bubbles: true }));
  }

  /* ---------------------------------------------------------------- rendering */

  function condRow(b, i, c, j) {
    const li = el("li", { className: "cond-row" });
    const at = "r" + i + "c" + j + ":";
    const notBox = keyed(el("input", { type: "checkbox" }), at + "not");
    notBox.checked = c.not;
    notBox.addEventListener("change", () => {
      c.not = notBox.checked;
      sync();
    });
    const notLabel = el("label", { className: "cond-not" });
    notLabel.append(notBox, document.createTextNode(gettext("not")));
    const path = keyed(el("input", { type: "text", list: "rule-paths", placeholder: "args.amount", autocomplete: "off" }), at + "path");
    path.value = c.path || "";
    path.addEventListener("input", () => {
      c.path = path.value.trim();
      sync();
    });
    const op = keyed(el("select"), at + "op");
    for (const o of OPS) op.appendChild(el("option", { value: o }, OP_LABELS[o] || o));
    op.value = c.op || "eq";
    const value = keyed(el("input", { type: "text", autocomplete: "off", placeholder: "1000, true, USD, a, b" }), at + "value");
    value.value = c.value === undefined ? "" : showValue(c.value);
    op.addEventListener("change", () => {
      c.op = op.value;
      c.value = parseValue(value.value, c.op);
      sync();
    });
    value.addEventListener("input", () => {
      c.value = parseValue(value.value, c.op);
      sync();
    });
    const remove = keyed(el("button", { type: "button", className: "btn btn-small btn-quiet",
                                        "aria-label": fmt(gettext("Remove condition %(condition)s of rule %(rule)s"), { condition: j + 1, rule: i + 1 }) }, "✕"),
                         at + "remove");
    remove.addEventListener("click", () => {
      b.conds.splice(j, 1);
      // focus goes where the removed one's place is: the next condition's remove, else the rule's "Add condition"
      render(["r" + i + "c" + j + ":remove", "r" + i + ":add-cond"]);
      sync();
    });
    li.append(notLabel, field(gettext("Path"), path), field(gettext("Operator"), op), field(gettext("Value"), value), remove);
    return li;
  }

  function ruleCard(b, i) {
    const li = el("li", { className: "rule-card", "data-action": b.action, "data-index": String(i) });
    const head = el("div", { className: "rule-head" });
    const at = "r" + i + ":";
    const name = keyed(el("input", { type: "text", maxlength: 100, placeholder: gettext("e.g. large transfer") }), at + "name");
    name.value = b.name;
    name.addEventListener("input", () => {
      b.name = name.value;
      sync();
    });
    const action = keyed(el("select"), at + "action");
    for (const a of ACTIONS) action.appendChild(el("option", { value: a }, ACTION_LABELS[a] || a));
    action.value = b.action;
    action.addEventListener("change", () => {
      b.action = action.value;
      li.dataset.action = b.action;
      render(); // a gate rule shows its route
      sync();
    });
    const always = keyed(el("input", { type: "checkbox" }), at + "always");
    always.checked = b.always;
    always.addEventListener("change", () => {
      b.always = always.checked;
      if (!b.always && !b.conds.length && b.raw === null) b.conds.push({ not: false, path: "args.", op: "eq", value: "" });
      render();
      sync();
    });
    const alwaysLabel = el("label", { className: "cond-not" });
    alwaysLabel.append(always, document.createTextNode(gettext("always (catch-all, last)")));
    const tools = el("span", { className: "rule-tools" });
    const mk = (text, label, fn, disabled, role) => {
      const btn = keyed(el("button", { type: "button", className: "btn btn-small btn-quiet", "aria-label": label }, text), at + role);
      btn.disabled = Boolean(disabled);
      btn.addEventListener("click", fn);
      tools.appendChild(btn);
    };
    mk("↑", fmt(gettext("Move rule %(rule)s up"), { rule: i + 1 }), () => move(i, -1), i === 0, "up");
    mk("↓", fmt(gettext("Move rule %(rule)s down"), { rule: i + 1 }), () => move(i, 1), i === model.length - 1, "down");
    mk(gettext("Remove"), fmt(gettext("Remove rule %(rule)s"), { rule: i + 1 }), () => {
      model.splice(i, 1);
      render(["r" + i + ":remove", "add-rule"]); // the next rule's Remove (now at this place), else "Add rule"
      sync();
    }, false, "remove");
    head.append(el("strong", {}, fmt(gettext("Rule %(rule)s"), { rule: i + 1 })), field(gettext("Name"), name, "field-name"), field(pgettext("rule", "Then"), action), alwaysLabel, tools);
    li.appendChild(head);
    if (b.raw !== null && !b.always) {
      const note = el("p", { className: "rule-json-only" }, gettext("This rule nests conditions deeper than the builder shows; edit it as JSON:") + " ");
      note.appendChild(el("code", {}, JSON.stringify(b.raw)));
      li.appendChild(note);
    } else if (!b.always) {
      const match = keyed(el("select"), at + "match");
      match.append(el("option", { value: "all" }, gettext("all of these hold")), el("option", { value: "any" }, gettext("any of these holds")));
      match.value = b.match;
      match.addEventListener("change", () => {
        b.match = match.value;
        sync();
      });
      li.appendChild(field(pgettext("rule", "When"), match, "field-match"));
      const list = el("ol", { className: "cond-list" });
      b.conds.forEach((c, j) => list.appendChild(condRow(b, i, c, j)));
      li.appendChild(list);
      const add = keyed(el("button", { type: "button", className: "btn btn-small" }, gettext("Add condition")), at + "add-cond");
      add.addEventListener("click", () => {
        b.conds.push({ not: false, path: "args.", op: "eq", value: "" });
        render();
        sync();
        const inputs = root.querySelectorAll('[data-index="' + i + '"] .cond-row input[list]');
        if (inputs.length) inputs[inputs.length - 1].focus();
      });
      li.appendChild(add);
    }
    if (b.action === "gate") li.appendChild(routeRow(b, i));
    const errors = el("ul", { className: "field-error error-list rule-errors" });
    errors.hidden = true;
    li.appendChild(errors);
    return li;
  }

  function move(i, by) {
    const [b] = model.splice(i, 1);
    const to = i + by;
    model.splice(to, 0, b);
    // the moved rule keeps focus: the same button, or its other one once it reached an end
    const same = by < 0 ? "up" : "down";
    const other = by < 0 ? "down" : "up";
    render(["r" + to + ":" + same, "r" + to + ":" + other]);
    sync();
    live.textContent = fmt(by < 0 ? gettext("Rule %(from)s moved up: now rule %(to)s") : gettext("Rule %(from)s moved down: now rule %(to)s"),
                           { from: i + 1, to: to + 1 });
  }

  // says what a move did (the order decides which rule wins); outside the list render() replaces
  const live = el("p", { className: "visually-hidden", role: "status", "aria-live": "polite", id: "rule-builder-live" });
  root.after(live);

  /* Rebuilds the list. `focus`: the keys (data-rb) to put focus on, the first that can take it; by
     default the control that had it, in its new copy. */
  function render(focus) {
    const had = document.activeElement && root.contains(document.activeElement) ? document.activeElement.closest("[data-rb]") : null;
    const keys = focus || (had ? [had.dataset.rb] : []);
    const list = el("ol", { className: "rules-list", "aria-label": gettext("Rules") });
    model.forEach((b, i) => list.appendChild(ruleCard(b, i)));
    const add = keyed(el("button", { type: "button", className: "btn btn-small", id: "add-rule" }, gettext("Add rule")), "add-rule");
    add.addEventListener("click", () => {
      model.push({ name: "", action: "gate", always: false, match: "all", raw: null, route: {},
                   conds: [{ not: false, path: "args.", op: "eq", value: "" }] });
      render();
      sync();
      const names = root.querySelectorAll(".rule-card .field-name input");
      if (names.length) names[names.length - 1].focus();
    });
    const empty = model.length ? null : el("p", { className: "muted" }, gettext("No rules: the mode alone decides."));
    root.replaceChildren(...[empty, list, add].filter(Boolean));
    showServerErrors();
    for (const key of keys) {
      const target = root.querySelector('[data-rb="' + key + '"]');
      if (target && !target.disabled) {
        target.focus();
        break;
      }
    }
  }

  function showServerErrors() {
    const items = document.querySelectorAll("#p-conditions-error li");
    for (const item of items) {
      const m = item.textContent.match(RULE_AT_START);
      const card = m && root.querySelector('.rule-card[data-index="' + (Number(m[1]) - 1) + '"] .rule-errors');
      if (!card) continue;
      card.appendChild(el("li", {}, item.textContent));
      card.hidden = false;
    }
  }

  function load(text) {
    let data;
    try {
      data = JSON.parse(text.trim() || "[]");
    } catch (e) {
      return window.aguiJSONProblem(text.trim());
    }
    if (!Array.isArray(data)) return gettext("The rules must be a JSON list.");
    if (!data.every((r) => r && typeof r === "object" && !Array.isArray(r))) return gettext("Every rule must be an object.");
    model = data.map(fromRule);
    copy = text; // as it came: a rule the builder shows in part is sent as it was
    typed = false;
    render();
    return "";
  }

  const loadButton = document.getElementById("json-to-builder");
  const problem = load(textarea.value);
  root.hidden = false;
  loadButton.hidden = false;
  if (problem) {
    root.replaceChildren(el("p", { className: "field-error" }, fmt(gettext("%(problem)s Fix it in the JSON below, then load it."), { problem })));
    document.getElementById("conditions-details").open = true;
  }
  loadButton.addEventListener("click", () => {
    const error = load(textarea.value);
    if (error) {
      root.replaceChildren(el("p", { className: "field-error" }, error));
    }
  });

  textarea.addEventListener("input", () => {
    typed = true; // the person's own JSON is sent as typed ("Load this JSON" brings it into the builder)
  });
  const details = document.getElementById("conditions-details");
  details.addEventListener("toggle", () => {
    if (details.open) syncRaw();
  });
  window.addEventListener("pageshow", syncRaw);
  if (textarea.form) textarea.form.addEventListener("submit", syncRaw);

  const revert = document.getElementById("revert-form");
  if (revert) {
    revert.addEventListener("submit", (event) => {
      if (!window.confirm(gettext("Delete this policy? The tool returns to its code defaults."))) event.preventDefault();
    });
  }
})();
