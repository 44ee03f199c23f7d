/*
 * state-panel.js — the shared-state panel of the chat page: a recipe card, a task checklist,
 * preferences and a document view above the raw JSON; predicted (provisional) values are marked.
 *
 * chat.js calls aguiStatePanel.render(state, meta) whenever the state changes (STATE_SNAPSHOT,
 * STATE_DELTA, CUSTOM state_version) and aguiStatePanel.onReply(frame) for the socket's
 * state_ack / error frames. Edits go back on the thread socket as
 * {"type": "state_patch", "baseVersion": <version>, "patch": [RFC 6902 ops]}; the server answers
 * with STATE_DELTA for every tab, or an error frame (stale version: with the current snapshot).
 *
 * All text is inserted with textContent (the document's Markdown through markdown.js:
 * markdown-it with raw HTML off, then DOMPurify).
 */
(function () {
  "use strict";

  const root = document.getElementById("state-cards");
  const statusEl = document.getElementById("state-status");
  let seq = 0;

  /* Emoji the model puts in recipes draw as empty boxes where the machine has no emoji font: then
     the cards show a plain bullet instead (.no-emoji in app.css). A colour glyph, or any glyph
     other than the one drawn for a code point no font has, means emoji render. */
  function emojiRenders() {
    try {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 24;
      const ctx = canvas.getContext("2d", { willReadFrequently: true });
      if (!ctx) return true;
      ctx.textBaseline = "top";
      ctx.font = "18px sans-serif";
      ctx.fillStyle = "#000";
      const draw = (text) => {
        ctx.clearRect(0, 0, 24, 24);
        ctx.fillText(text, 0, 0);
        return ctx.getImageData(0, 0, 24, 24).data;
      };
      const missing = draw("\u{10FFFD}").join(",");
      const pixels = draw("\u{1F35D}");
      for (let i = 0; i < pixels.length; i += 4) {
        if (pixels[i + 3] && (pixels[i] !== pixels[i + 1] || pixels[i + 1] !== pixels[i + 2])) return true;
      }
      return pixels.join(",") !== missing;
    } catch (e) {
      return true;
    }
  }
  if (!emojiRenders()) document.documentElement.classList.add("no-emoji");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") window.aguiVisible.set(node, String(value)); // bidi controls shown, not obeyed
      else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function pointer(...parts) {
    return parts.map((p) => "/" + String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
  }

  function setStatus(text, kind) {
    if (!statusEl) return;
    statusEl.textContent = text || "";
    statusEl.dataset.kind = kind || "";
    statusEl.hidden = !text;
  }

  function sendPatch(ops) {
    const chat = window.aguiChat || {};
    const ws = chat.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      setStatus(gettext("Not connected; your change was not sent."), "error");
      return;
    }
    const meta = chat.stateMeta || {};
    ws.send(JSON.stringify({ type: "state_patch", baseVersion: meta.version || 0, patch: ops, ref: "edit-" + ++seq }));
    setStatus(gettext("Saving…"), "");
  }

  function onReply(frame) {
    if (!frame) return;
    if (frame.type === "state_ack") {
      setStatus(gettext("Saved."), "ok");
      return;
    }
    if (frame.type !== "error" || !String(frame.code || "").startsWith("state_")) return;
    const chat = window.aguiChat || {};
    if (frame.snapshot && typeof chat.setState === "function") {
      chat.stateMeta = Object.assign({}, chat.stateMeta || {}, { version: frame.version });
      chat.setState(frame.snapshot);
    }
    const why = {
      state_conflict: gettext("Someone changed this in the meantime; you now see the current version. Try again."),
      state_provisional: gettext("This part waits for a decision; change it once it is approved or rejected."),
    }[frame.code];
    setStatus(why || frame.message || gettext("The change was refused."), "error");
  }

  function provisionalBadge(key, provisional) {
    if (!provisional.has(key)) return null;
    return el("span", { class: "badge badge-provisional", title: gettext("Predicted from the agent's tool call; not saved yet"), text: gettext("predicted · not saved") });
  }

  function card(key, title, provisional, ...body) {
    return el(
      "section",
      { class: "state-card" + (provisional.has(key) ? " provisional" : ""), "data-state-key": key, "aria-label": title },
      el("div", { class: "state-card-head" }, el("h3", { class: "state-card-title", text: title }), provisionalBadge(key, provisional)),
      ...body
    );
  }

  function recipeCard(recipe, provisional) {
    const locked = provisional.has("recipe");
    const title = el("h4", { class: "recipe-title", text: recipe.title || gettext("Untitled recipe") });
    const editTitle = locked
      ? null
      : el("button", {
          type: "button",
          class: "btn btn-small btn-quiet",
          "aria-label": gettext("Rename the recipe"),
          text: "✎",
          onclick: () => {
            const next = window.prompt(gettext("Recipe title"), recipe.title || "");
            if (next !== null && next.trim() && next !== recipe.title) {
              sendPatch([{ op: recipe.title === undefined ? "add" : "replace", path: pointer("recipe", "title"), value: next.trim() }]);
            }
          },
        });
    const chips = [recipe.skill_level, recipe.cooking_time, ...(Array.isArray(recipe.special_preferences) ? recipe.special_preferences : [])]
      .filter((v) => typeof v === "string" && v)
      .map((v) => el("span", { class: "chip", text: v }));
    const ingredients = Array.isArray(recipe.ingredients) ? recipe.ingredients : [];
    const steps = Array.isArray(recipe.instructions) ? recipe.instructions : [];
    return card(
      "recipe",
      gettext("Recipe"),
      provisional,
      el("div", { class: "recipe-head" }, title, editTitle),
      chips.length ? el("div", { class: "chips" }, ...chips) : null,
      ingredients.length
        ? el("ul", { class: "ingredients", "aria-label": gettext("Ingredients") },
            ...ingredients.map((i) => el("li", null, el("span", { class: "icon", "aria-hidden": "true", text: (i && i.icon) || "•" }), " ",
              el("span", { text: (i && i.name) || "" }), i && i.amount ? el("span", { class: "muted", text: " — " + i.amount }) : null)))
        : null,
      steps.length ? el("ol", { class: "instructions", "aria-label": gettext("Instructions") }, ...steps.map((s) => el("li", { text: String(s) }))) : null
    );
  }

  function checklist(steps, provisional) {
    const locked = provisional.has("steps");
    return card(
      "steps",
      gettext("Tasks"),
      provisional,
      el(
        "ul",
        { class: "checklist", "aria-label": gettext("Task steps") },
        ...steps.map((step, i) => {
          const id = "step-" + i;
          const box = el("input", {
            type: "checkbox",
            id,
            checked: step && step.status === "completed",
            disabled: locked || (step && step.status === "skipped"),
            onchange: (e) => sendPatch([{ op: "replace", path: pointer("steps", i, "status"), value: e.target.checked ? "completed" : "pending" }]),
          });
          return el(
            "li",
            { class: "step step-" + ((step && step.status) || "pending") },
            box,
            " ",
            el("label", { for: id, text: (step && step.description) || "" }),
            step && step.estimated_duration ? el("span", { class: "muted", text: " · " + step.estimated_duration }) : null
          );
        })
      )
    );
  }

  function preferencesCard(prefs, provisional) {
    const rows = Object.entries(prefs).map(([k, v]) =>
      el("div", { class: "pref" }, el("dt", { text: k }), el("dd", { text: Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v) }))
    );
    return card("preferences", gettext("Preferences"), provisional, el("dl", { class: "prefs" }, ...rows));
  }

  function documentCard(doc, provisional) {
    const body = el("div", { class: "doc-body md" });
    const text = typeof doc.content === "string" ? doc.content : "";
    body.appendChild(window.renderMarkdown ? window.renderMarkdown(text) : document.createTextNode(text));
    const meta = doc.metadata && typeof doc.metadata === "object" ? Object.entries(doc.metadata) : [];
    return card(
      "document",
      gettext("Document"),
      provisional,
      el("h4", { class: "doc-title", text: doc.title || gettext("Untitled") }),
      meta.length ? el("div", { class: "chips" }, ...meta.map(([k, v]) => el("span", { class: "chip", text: k + ": " + (typeof v === "object" ? JSON.stringify(v) : v) }))) : null,
      body
    );
  }

  function render(state, meta) {
    if (!root) return;
    const provisional = new Set(((meta && meta.provisional) || []).map((p) => p.key));
    const cards = [];
    if (state && typeof state === "object") {
      if (state.recipe && typeof state.recipe === "object") cards.push(recipeCard(state.recipe, provisional));
      if (Array.isArray(state.steps)) cards.push(checklist(state.steps, provisional));
      if (state.preferences && typeof state.preferences === "object" && Object.keys(state.preferences).length) cards.push(preferencesCard(state.preferences, provisional));
      if (state.document && typeof state.document === "object") cards.push(documentCard(state.document, provisional));
    }
    root.replaceChildren(...cards);
    root.hidden = !cards.length;
    document.body.dataset.stateVersion = String((meta && meta.version) || 0);
    document.body.dataset.stateProvisional = Array.from(provisional).join(" ");
  }

  window.aguiStatePanel = { render, onReply, sendPatch };
})();
