/*
 * schema-editor.js — an arguments editor generated from a tool's JSON schema (pydantic output).
 *
 *   const ed = SchemaEditor.create(container, schema, value, {onChange(value, problems) {}, labels: {path: label}});
 *   ed.value()  ed.setValue(v)  ed.showErrors({"steps.0.description": ["..."]})  ed.focusFirst()
 *
 * Typed inputs: strings (a textarea when long), numbers and integers, booleans and enums as
 * selects, nested objects as fieldsets, arrays as lists with add / remove, "anyOf [T, null]" as T;
 * anything else (free-form objects, unions) as a small JSON textarea of its own. Every input's id
 * is "arg__" + its path joined with "__" (amount -> arg__amount, steps.0.status ->
 * arg__steps__0__status); its error slot has data-error-for="<dotted path>", the form the server's
 * validation errors use. Only textContent and .value are ever set from data.
 */
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)

  /* Numbers the page language's way ("1 000 000", "1234,56" in French): the field shows and takes
     them so, and the value stays a JSON number. Intl tells the separators. */
  const LANG = document.documentElement.lang || undefined;
  const SEP = (() => {
    const parts = new Intl.NumberFormat(LANG).formatToParts(1234567.5);
    const part = (type) => (parts.find((p) => p.type === type) || {}).value;
    return { decimal: part("decimal") || ".", group: part("group") || "" };
  })();
  const SPACES = "\u0020\u00a0\u202f\u2009";  // a space-like group separator: any of them is typed
  const escapeRe = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const GROUP_RE = !SEP.group ? "" : (SPACES.includes(SEP.group) ? "[" + SPACES + "]" : escapeRe(SEP.group));
  // an optional sign, digits either ungrouped or grouped by threes, the decimal separator, an exponent
  const LOCAL_NUMBER = new RegExp("^([-+\u2212]?)(\\d*|\\d{1,3}(?:" + (GROUP_RE || "(?!)") + "\\d{3})+)(?:" +
                                  escapeRe(SEP.decimal) + "(\\d+))?([eE][-+]?\\d+)?$");
  const formatLimit = (x) => (typeof x === "number" ? new Intl.NumberFormat(LANG, { maximumFractionDigits: 20 }).format(x) : x);

  /* What the reviewer typed, as a number (NaN when it is none): the page language's way, or a
     JSON-style one ("1234.56", "1e30") where the language does not use "." between groups. */
  function parseNumber(raw) {
    const m = raw.match(LOCAL_NUMBER);
    if (m && (m[2] || m[3])) {
      const digits = m[2].replace(new RegExp(GROUP_RE || "(?!)", "g"), "");
      return Number((m[1] === "" || m[1] === "+" ? "" : "-") + (digits || "0") + (m[3] ? "." + m[3] : "") + (m[4] || ""));
    }
    if (SEP.group === "." || raw.includes(SEP.group || "\u0000") || raw.includes(",")) return NaN;  // "1.234" means 1234 there
    // a JSON number only: Number() also reads "0x10" as 16 and "0b11" as 3, which nobody typing an amount meant
    return /^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(raw) ? Number(raw) : NaN;
  }

  /* A number as the field shows it: no groups, the language's decimal separator ("500,5"). */
  const showNumber = (x) => String(x).replace(".", SEP.decimal);

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "className") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    if (text !== undefined) window.aguiVisible.set(node, String(text)); // bidi controls shown, not obeyed
    return node;
  }

  const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  /* A key that comes with data (a caller's schema, its arguments, the server's labels and errors) is
     read and written as the object's own property only: "__proto__", "constructor" or "prototype"
     is then a field like any other, never Object.prototype (the page's every object and fetch). */
  const hasOwn = (o, k) => o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);
  const own = (o, k) => (hasOwn(o, k) ? o[k] : undefined);
  const put = (o, k, v) => Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });

  function getIn(root, path) {
    let node = root;
    for (const seg of path) {
      if (node === null || typeof node !== "object") return undefined;
      node = own(node, seg);
    }
    return node;
  }

  function setIn(root, path, value) {
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      const seg = path[i];
      const next = own(node, seg);
      if (next === null || typeof next !== "object") put(node, seg, typeof path[i + 1] === "number" ? [] : {});
      node = own(node, seg);
    }
    const last = path[path.length - 1];
    if (value === undefined) {
      if (Array.isArray(node)) node[last] = null;
      else if (hasOwn(node, last)) delete node[last];
    } else put(node, last, value);
  }

  /* ---------------------------------------------------------------- schema helpers */

  function makeResolver(root) {
    const defs = (root && (root.$defs || root.definitions)) || {};
    return function resolve(node) {
      let guard = 0;
      while (node && node.$ref && guard++ < 20) node = own(defs, String(node.$ref).split("/").pop()) || {};
      return node || {};
    };
  }

  function kindOf(node, resolve) {
    node = resolve(node);
    const union = node.anyOf || node.oneOf;
    if (union) {
      const options = union.map(resolve).filter((o) => o.type !== "null");
      if (options.length === 1) return { ...kindOf(options[0], resolve), nullable: true };
      return { kind: "json", node };
    }
    if (Array.isArray(node.enum)) return { kind: "enum", node };
    let type = node.type;
    if (Array.isArray(type)) {
      const rest = type.filter((t) => t !== "null");
      if (rest.length !== 1) return { kind: "json", node };
      type = rest[0];
    }
    if (type === "string" || type === "number" || type === "integer" || type === "boolean") return { kind: type, node };
    if (type === "object" && node.properties && Object.keys(node.properties).length) return { kind: "object", node };
    if (type === "array" && node.items && !Array.isArray(node.items)) return { kind: "array", node };
    return { kind: "json", node };
  }

  function defaultFor(node, resolve) {
    const { kind, node: n } = kindOf(node, resolve);
    if (n.default !== undefined) return clone(n.default);
    if (kind === "object") {
      const out = {};
      for (const [name, prop] of Object.entries(n.properties || {})) {
        const p = resolve(prop);
        if (p.default !== undefined) put(out, name, clone(p.default));
        else if ((n.required || []).includes(name)) {
          const k = kindOf(prop, resolve).kind;
          if (k === "string") put(out, name, "");
          else if (k === "enum") put(out, name, resolve(prop).enum[0]);
          else if (k === "array") put(out, name, []);
          else if (k === "object") put(out, name, defaultFor(prop, resolve));
        }
      }
      return out;
    }
    if (kind === "array") return [];
    if (kind === "enum") return n.enum[0];
    if (kind === "boolean") return false;
    if (kind === "string") return "";
    return undefined;
  }

  /* A pattern in words where it is a plain one ("6 to 20 digits"); a regex is never shown to a
     person (the field's description and the server's error say what is wanted). */
  function patternWords(pattern) {
    const m = typeof pattern === "string" && pattern.match(/^\^(?:\\d|\[0-9\])\{(\d+)(?:,(\d+))?\}\$$/);
    if (!m) return "";
    return m[2] ? fmt(gettext("%(min)s to %(max)s digits"), { min: m[1], max: m[2] }) : fmt(gettext("%(count)s digits"), { count: m[1] });
  }

  /* What the field's help says of its bounds, checked as the reviewer types (the server checks again):
     "" when `x` is inside them. */
  function outOfBounds(n, x) {
    if (n.exclusiveMinimum !== undefined && !(x > n.exclusiveMinimum)) return fmt(gettext("must be more than %(limit)s"), { limit: formatLimit(n.exclusiveMinimum) });
    if (n.minimum !== undefined && !(x >= n.minimum)) return fmt(gettext("must be at least %(limit)s"), { limit: formatLimit(n.minimum) });
    if (n.exclusiveMaximum !== undefined && !(x < n.exclusiveMaximum)) return fmt(gettext("must be less than %(limit)s"), { limit: formatLimit(n.exclusiveMaximum) });
    if (n.maximum !== undefined && !(x <= n.maximum)) return fmt(gettext("must be at most %(limit)s"), { limit: formatLimit(n.maximum) });
    if (n.multipleOf !== undefined && n.multipleOf > 0 && Math.abs(Math.round(x / n.multipleOf) * n.multipleOf - x) > 1e-9 * Math.max(1, Math.abs(x))) {
      return fmt(gettext("must be a multiple of %(step)s"), { step: formatLimit(n.multipleOf) });
    }
    return "";
  }

  function constraintsText(n) {
    const parts = [];
    if (n.exclusiveMinimum !== undefined) parts.push("> " + formatLimit(n.exclusiveMinimum));
    if (n.minimum !== undefined) parts.push("≥ " + formatLimit(n.minimum));
    if (n.exclusiveMaximum !== undefined) parts.push("< " + formatLimit(n.exclusiveMaximum));
    if (n.maximum !== undefined) parts.push("≤ " + formatLimit(n.maximum));
    if (n.maxLength !== undefined) parts.push(fmt(gettext("at most %(count)s characters"), { count: n.maxLength }));
    const words = patternWords(n.pattern);
    if (words) parts.push(words);
    if (n.maxItems !== undefined) parts.push(fmt(gettext("at most %(count)s items"), { count: n.maxItems }));
    if (n.minItems) parts.push(fmt(gettext("at least %(count)s"), { count: n.minItems }));
    return parts.join(", ");
  }

  /* ---------------------------------------------------------------- diff (old → new) */

  function flatten(value, prefix, out, paths) {
    if (Array.isArray(value) && value.length) value.forEach((v, i) => flatten(v, prefix.concat(i), out, paths));
    else if (isObject(value) && Object.keys(value).length) {
      for (const k of Object.keys(value)) flatten(value[k], prefix.concat(k), out, paths);
    } else {
      out.set(prefix.join("."), value);
      if (paths) paths.set(prefix.join("."), prefix);
    }
    return out;
  }

  /* A field as people read it: each key by the label the server gave for its path (our own tools',
     in the page's language; an array's items as "*"), else by its name with spaces, as the editor
     labels its fields; an item of a list by its number. `path`: ["steps", 2, "status"], or the
     editor's "steps.2.status". */
  function nameOf(path, labels) {
    const parts = Array.isArray(path) ? path : String(path).split(".").map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    const names = parts.map((p, i) => {
      if (typeof p === "number") return "#" + (p + 1);
      const key = parts.slice(0, i + 1).map((q) => (typeof q === "number" ? "*" : q)).join(".");
      return own(labels, key) || String(p).replace(/_/g, " ");
    });
    return names.length ? names.join(" › ") : gettext("(arguments)");
  }

  function display(v) {
    if (v === undefined) return gettext("(none)");
    if (v === null) return "null";
    if (v === "") return gettext("(empty)");
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function same(a, b) {
    return JSON.stringify(a) === JSON.stringify(b);
  }

  /** [{path, before, after}] for every leaf that differs, in a stable order. */
  function diff(before, after) {
    const paths = new Map();
    const a = flatten(before, [], new Map(), paths);
    const b = flatten(after, [], new Map(), paths);
    const keys = Array.from(new Set([...a.keys(), ...b.keys()]));
    return keys
      .filter((k) => !same(a.get(k), b.get(k)))
      .map((k) => ({ path: k || "(arguments)", segments: paths.get(k), before: a.get(k), after: b.get(k) }));
  }

  /* ---------------------------------------------------------------- the editor */

  function create(container, schema, initial, options) {
    const opts = options || {};
    const resolve = makeResolver(schema || {});
    const rootKind = kindOf(schema || {}, resolve);
    const original = clone(initial) || {};
    let value = clone(initial) || {};
    const problems = new Map(); // path -> local message (unparsable number, bad JSON)
    let serverErrors = {};

    const idFor = (path) => "arg__" + (path.length ? path.join("__") : "root");
    // a field's label: the one the server gave for its path (an array's items as "*": our own tools'
    // labels in the page's language), else its name as the schema has it
    const labels = opts.labels || {};
    const labelOf = (path) => own(labels, path.map((p) => (typeof p === "number" ? "*" : p)).join("."))
      || String(path[path.length - 1]).replace(/_/g, " ");
    const changed = () => {
      if (opts.onChange) opts.onChange(clone(value), new Map(problems));
    };

    function errorSlot(path) {
      const p = el("p", { className: "field-error", "data-error-for": path.join("."), id: idFor(path) + "-error" });
      p.hidden = true;
      return p;
    }

    function label(text, path, required) {
      const l = el("label", { for: idFor(path) }, text);
      if (required) l.appendChild(el("span", { className: "required", "aria-hidden": "true" }, " *"));
      return l;
    }

    function help(node, path) {
      const text = [resolve(node).description, constraintsText(resolve(node))].filter(Boolean).join(" — ");
      return text ? el("p", { className: "field-help", id: idFor(path) + "-help" }, text) : null;
    }

    function describe(input, path, helpNode) {
      const ids = [idFor(path) + "-error"];
      if (helpNode) ids.push(helpNode.id);
      input.setAttribute("aria-describedby", ids.join(" "));
    }

    function markProblem(input, path, message) {
      const key = path.join(".");
      if (message) problems.set(key, message);
      else problems.delete(key);
      const slot = container.querySelector('[data-error-for="' + CSS.escape(key) + '"]');
      const server = (own(serverErrors, key) || []).join("; ");
      if (slot) {
        slot.textContent = message || server;
        slot.hidden = !(message || server);
      }
      if (message || server) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }

    function scalar(kindInfo, path, name, required) {
      const { kind, node } = kindInfo;
      const wrap = el("div", { className: "field ed-field ed-" + kind, "data-path": path.join(".") });
      const current = getIn(value, path);
      const helpNode = help(node, path);
      wrap.appendChild(label(name, path, required));
      let input;
      let bidiNote = null;
      const optional = !required || kindInfo.nullable;
      if (kind === "enum" || kind === "boolean") {
        input = el("select", { id: idFor(path), "data-kind": kind });
        const choices = kind === "boolean" ? [true, false] : node.enum;
        if (optional || current === undefined) input.appendChild(el("option", { value: "" }, "—"));
        choices.forEach((choice, i) => {
          const option = el("option", { value: String(i) }, display(choice));
          if (same(choice, current)) option.selected = true;
          input.appendChild(option);
        });
        if (current === undefined || current === null) input.value = "";
        input.addEventListener("change", () => {
          setIn(value, path, input.value === "" ? undefined : clone(choices[Number(input.value)]));
          markProblem(input, path, "");
          changed();
        });
      } else if (kind === "number" || kind === "integer") {
        input = el("input", { type: "text", inputmode: kind === "integer" ? "numeric" : "decimal", id: idFor(path),
                              "data-kind": kind, autocomplete: "off" });
        input.value = current === undefined || current === null ? "" : (typeof current === "number" ? showNumber(current) : String(current));
        input.addEventListener("input", () => {
          const raw = input.value.trim();
          if (raw === "") {
            setIn(value, path, optional ? undefined : null);
            markProblem(input, path, optional ? "" : gettext("required"));
          } else {
            const n = parseNumber(raw);
            const outside = Number.isFinite(n) ? outOfBounds(node, n) : "";
            if (!Number.isFinite(n)) markProblem(input, path, gettext("not a number"));
            else if (kind === "integer" && !Number.isInteger(n)) markProblem(input, path, gettext("a whole number"));
            else if (outside) markProblem(input, path, outside);
            else if (Number.isInteger(n) && !Number.isSafeInteger(n)) {
              // the browser's number would not be the one typed (99999999999999999999 reads 1e20)
              markProblem(input, path, gettext("too large to be kept exactly"));
            } else {
              setIn(value, path, n);
              markProblem(input, path, "");
            }
          }
          changed();
        });
      } else {
        const long = (node.maxLength || 0) > 200 || (typeof current === "string" && (current.length > 80 || current.includes("\n")));
        input = long ? el("textarea", { id: idFor(path), rows: (node.maxLength || 0) > 1000 ? 4 : 2, "data-kind": "string" })
                     : el("input", { type: "text", id: idFor(path), "data-kind": "string", autocomplete: "off" });
        if (node.maxLength) input.setAttribute("maxlength", node.maxLength);
        input.value = current === undefined || current === null ? "" : String(current);
        // a field cannot show a text-direction control (it would obey it): say it holds some, written out
        bidiNote = el("p", { className: "field-help bidi-note", id: idFor(path) + "-bidi" });
        const showBidi = () => {
          bidiNote.hidden = !window.aguiVisible.has(input.value);
          if (bidiNote.hidden) bidiNote.replaceChildren();
          else bidiNote.replaceChildren((window.aguiVisible.invisibleOnly(input.value)
            ? gettext("Holds invisible characters; as it is stored:")
            : gettext("Holds text-direction control characters; as it is stored:")) + " ",
                                        el("bdi", { className: "bidi-value" }, input.value));
        };
        showBidi();
        // a plain digits pattern (an account number) is checked as it is typed, as a number's bounds are:
        // " 0987654321" or "12345" was refused only after the confirmation, as a change that looked like none
        const digits = patternWords(node.pattern);
        const digitsRe = digits ? new RegExp(node.pattern) : null;
        input.addEventListener("input", () => {
          const before = getIn(original, path);
          setIn(value, path, input.value === "" && before === undefined && optional ? undefined : input.value);
          const wrong = digitsRe && input.value !== "" && !digitsRe.test(input.value);
          markProblem(input, path, wrong ? digits : "");
          showBidi();
          changed();
        });
      }
      describe(input, path, helpNode);
      wrap.appendChild(input);
      if (bidiNote) wrap.appendChild(bidiNote);
      if (helpNode) wrap.appendChild(helpNode);
      wrap.appendChild(errorSlot(path));
      return wrap;
    }

    function jsonField(kindInfo, path, name, required) {
      const wrap = el("div", { className: "field ed-field ed-json", "data-path": path.join(".") });
      const helpNode = el("p", { className: "field-help", id: idFor(path) + "-help" },
        [resolve(kindInfo.node).description, "JSON"].filter(Boolean).join(" — "));
      wrap.appendChild(label(name, path, required));
      const current = getIn(value, path);
      const input = el("textarea", { id: idFor(path), rows: 3, className: "mono", spellcheck: "false", "data-kind": "json" });
      input.value = current === undefined ? "" : window.aguiVisible.jsonEscapes(JSON.stringify(current, null, 2));
      input.addEventListener("input", () => {
        const raw = input.value.trim();
        if (raw === "") {
          setIn(value, path, undefined);
          markProblem(input, path, "");
        } else {
          try {
            setIn(value, path, JSON.parse(raw));
            markProblem(input, path, "");
          } catch (e) {
            markProblem(input, path, gettext("not valid JSON"));
          }
        }
        changed();
      });
      describe(input, path, helpNode);
      wrap.append(input, helpNode, errorSlot(path));
      return wrap;
    }

    function objectField(kindInfo, path, name, required) {
      const node = kindInfo.node;
      const box = path.length ? el("fieldset", { className: "ed-object", "data-path": path.join(".") }) : el("div", { className: "ed-root" });
      if (path.length) {
        const legend = el("legend", {}, name);
        if (required) legend.appendChild(el("span", { className: "required", "aria-hidden": "true" }, " *"));
        box.appendChild(legend);
        if (getIn(value, path) === undefined || getIn(value, path) === null) setIn(value, path, {});
      }
      const req = new Set(node.required || []);
      for (const [prop, sub] of Object.entries(node.properties || {})) {
        box.appendChild(field(sub, path.concat(prop), labelOf(path.concat(prop)), req.has(prop)));
      }
      const slot = errorSlot(path);
      box.appendChild(slot);
      return box;
    }

    function arrayField(kindInfo, path, name, required) {
      const node = kindInfo.node;
      const items = getIn(value, path);
      if (!Array.isArray(items)) setIn(value, path, []);
      const list = getIn(value, path);
      const box = el("fieldset", { className: "ed-array", "data-path": path.join(".") });
      const legend = el("legend", {}, name + " (" + list.length + ")");
      if (required) legend.appendChild(el("span", { className: "required", "aria-hidden": "true" }, " *"));
      box.appendChild(legend);
      const helpText = constraintsText(node);
      if (resolve(node).description || helpText) {
        box.appendChild(el("p", { className: "field-help" }, [resolve(node).description, helpText].filter(Boolean).join(" — ")));
      }
      const ol = el("ol", { className: "ed-items" });
      list.forEach((_, i) => {
        const li = el("li", { className: "ed-item" });
        li.appendChild(field(node.items, path.concat(i), name.replace(/s$/, "") + " " + (i + 1), true));
        const remove = el("button", { type: "button", className: "btn btn-small btn-quiet ed-remove",
                                      "aria-label": fmt(gettext("Remove %(name)s item %(number)s"), { name, number: i + 1 }) }, gettext("Remove"));
        remove.addEventListener("click", () => {
          getIn(value, path).splice(i, 1);
          rerender(idFor(path) + "-add");
          changed();
        });
        li.appendChild(remove);
        ol.appendChild(li);
      });
      box.appendChild(ol);
      const add = el("button", { type: "button", className: "btn btn-small ed-add", id: idFor(path) + "-add" }, fmt(gettext("Add %(item)s"), { item: name.replace(/s$/, "") }));
      if (node.maxItems !== undefined && list.length >= node.maxItems) add.disabled = true;
      add.addEventListener("click", () => {
        getIn(value, path).push(defaultFor(node.items, resolve));
        rerender(null, path.concat(getIn(value, path).length - 1).join("."));
        changed();
      });
      box.appendChild(add);
      box.appendChild(errorSlot(path));
      return box;
    }

    function field(node, path, name, required) {
      const info = kindOf(node, resolve);
      if (info.kind === "object") return objectField(info, path, name, required);
      if (info.kind === "array") return arrayField(info, path, name, required);
      if (info.kind === "json") return jsonField(info, path, name, required);
      return scalar(info, path, name, required);
    }

    function render() {
      problems.clear();
      container.replaceChildren();
      if (rootKind.kind === "object") container.appendChild(objectField(rootKind, [], "", true));
      else container.appendChild(jsonField({ kind: "json", node: schema || {} }, [], "arguments", true));
      applyServerErrors();
    }

    /** Rebuild after a structural change; focus moves to an element by id, or into a path's field. */
    function rerender(focusId, focusPath) {
      render();
      let target = focusId ? document.getElementById(focusId) : null;
      if (!target && focusPath !== undefined) {
        const box = container.querySelector('[data-path="' + CSS.escape(focusPath) + '"]');
        target = box && (box.matches("input, select, textarea") ? box : box.querySelector("input, select, textarea"));
      }
      target = target || container.querySelector("input, select, textarea, button");
      if (target) target.focus();
    }

    function applyServerErrors() {
      const general = [];
      for (const [path, messages] of Object.entries(serverErrors)) {
        const slot = container.querySelector('[data-error-for="' + CSS.escape(path) + '"]');
        if (!slot) {
          general.push([path, messages]);
          continue;
        }
        slot.textContent = messages.join("; ");
        slot.hidden = false;
        const input = document.getElementById(idFor(path === "" ? [] : path.split(".")));
        if (input) input.setAttribute("aria-invalid", "true");
      }
      return general;
    }

    render();
    return {
      value: () => clone(value),
      original: () => clone(original),
      problems: () => new Map(problems),
      setValue(v) {
        value = clone(v) || {};
        render();
        changed();
      },
      reset() {
        value = clone(original);
        serverErrors = {};
        render();
        changed();
      },
      /** Server validation errors {dotted path: [messages]}; returns those no field could show. */
      showErrors(errors) {
        serverErrors = errors || {};
        render();
        return Object.entries(serverErrors).filter(
          ([path]) => !container.querySelector('[data-error-for="' + CSS.escape(path) + '"]'));
      },
      focusFirst() {
        const first = container.querySelector("[aria-invalid=true]") || container.querySelector("input, select, textarea");
        if (first) first.focus();
        return first;
      },
    };
  }

  window.SchemaEditor = { create, diff, display, nameOf };
})();
