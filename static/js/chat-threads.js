/*
 * chat-threads.js — rename and delete chats in the chat list (the REST API only lists and
 * changes the signed-in user's own threads).
 *
 * Rename: the title turns into a small form (Enter saves, Escape cancels). Delete: an inline
 * confirmation (no window.confirm, so it stays keyboard- and test-friendly); deleting the open
 * chat goes back to /chat/. Text goes in with textContent only.
 *
 * Other tabs: when this one is shown again (or regains focus) the list is fetched anew as the
 * server renders it (?partial=threads, escaped by the template), unless someone is using it.
 */
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);  // Django's catalogue (/jsi18n/)

  const list = document.getElementById("thread-list");
  const empty = document.getElementById("no-threads");
  if (!list) return;

  function showEmpty() {
    list.hidden = !list.querySelector(".thread-item, .thread-pages");
    if (empty) empty.hidden = !list.hidden;
  }

  function getCookie(name) {
    for (const part of document.cookie ? document.cookie.split(";") : []) {
      const [k, ...rest] = part.trim().split("=");
      if (k === name) return decodeURIComponent(rest.join("="));
    }
    return "";
  }

  async function request(method, url, body) {
    const res = await window.aguiFetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": getCookie("csrftoken") },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = {};
    try {
      const text = await res.text();
      data = text ? JSON.parse(text) : {};
    } catch (e) {
      data = {};
    }
    return { ok: res.ok, status: res.status, data: data || {} };
  }

  function message(data, status) {
    if (data && typeof data.message === "string" && data.message) {
      const fields = Object.entries(data)
        .filter(([k, v]) => k !== "message" && k !== "code" && Array.isArray(v))
        .map(([k, v]) => k + ": " + v.join(" "));
      return fields.length ? fields.join("; ") : data.message;
    }
    return window.aguiStatus(status);
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") window.aguiVisible.set(node, v); // bidi controls shown, not obeyed
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return node;
  }

  const openThread = (() => {
    const cfg = document.getElementById("chat-config");
    try {
      const id = cfg ? (JSON.parse(cfg.textContent || "{}") || {}).threadId : null;
      return id === null || id === undefined ? null : String(id);
    } catch (e) {
      return null;
    }
  })();

  function titleOf(item) {
    return item.dataset.title || "";
  }

  function labelOf(title) {
    return title || gettext("Untitled chat");
  }

  /* Reflect a new title everywhere it shows: the list item, its buttons' names, the header. */
  function applyTitle(item, title) {
    item.dataset.title = title;
    item.querySelector(".thread-title").textContent = labelOf(title);
    item.querySelector('[data-thread-act="rename"]').setAttribute("aria-label", fmt(gettext("Rename chat: %(title)s"), { title: labelOf(title) }));
    item.querySelector('[data-thread-act="delete"]').setAttribute("aria-label", fmt(gettext("Delete chat: %(title)s"), { title: labelOf(title) }));
    if (item.dataset.threadId === openThread) {
      const subtitle = document.querySelector(".chat-subtitle");
      if (subtitle) subtitle.textContent = title;
      document.title = labelOf(title) + " · agui-inbox";
    }
  }

  function closeEditors(item) {
    for (const box of item.querySelectorAll(".thread-rename, .thread-confirm")) box.remove();
    item.classList.remove("editing");
  }

  function startRename(item) {
    closeEditors(item);
    item.classList.add("editing");
    const inputId = "rename-" + item.dataset.threadId;
    // no maxlength: the browser's counts UTF-16 units (an emoji two) and cut titles the server takes
    // (200 characters); a longer one is refused in words below
    const input = el("input", { type: "text", id: inputId, value: titleOf(item), autocomplete: "off" });
    input.value = titleOf(item);
    const error = el("p", { class: "field-error", role: "alert", hidden: true });
    const form = el(
      "form",
      { class: "thread-rename" },
      el("label", { for: inputId, class: "visually-hidden", text: gettext("New title") }),
      input,
      el("div", { class: "btn-row" },
        el("button", { type: "submit", class: "btn btn-primary btn-small", text: gettext("Save") }),
        el("button", { type: "button", class: "btn btn-small btn-quiet", "data-cancel": "1", text: gettext("Cancel") })),
      error
    );
    const cancel = () => {
      closeEditors(item);
      item.querySelector('[data-thread-act="rename"]').focus();
    };
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const title = input.value.trim();
      for (const b of form.querySelectorAll("button")) b.disabled = true;
      try {
        const res = await request("PATCH", "/api/threads/" + encodeURIComponent(item.dataset.threadId) + "/", { title });
        if (res.ok) {
          applyTitle(item, (res.data && typeof res.data.title === "string") ? res.data.title : title);
          cancel();
          return;
        }
        error.textContent = message(res.data, res.status);
      } catch (e) {
        error.textContent = fmt(gettext("Could not rename: %(error)s"), { error: e.message });
      }
      error.hidden = false;
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    });
    form.querySelector("[data-cancel]").addEventListener("click", cancel);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        cancel();
      }
    });
    item.appendChild(form);
    input.focus();
    input.select();
  }

  function startDelete(item) {
    closeEditors(item);
    item.classList.add("editing");
    const error = el("p", { class: "field-error", role: "alert", hidden: true });
    const yes = el("button", { type: "button", class: "btn btn-danger btn-small", text: gettext("Delete") });
    const no = el("button", { type: "button", class: "btn btn-small btn-quiet", text: gettext("Cancel") });
    const box = el(
      "div",
      { class: "thread-confirm", role: "group", "aria-label": fmt(gettext("Confirm deleting %(title)s"), { title: labelOf(titleOf(item)) }) },
      el("span", { text: gettext("Delete this chat and its messages?") }),
      el("div", { class: "btn-row" }, yes, no),
      error
    );
    const cancel = () => {
      closeEditors(item);
      item.querySelector('[data-thread-act="delete"]').focus();
    };
    no.addEventListener("click", cancel);
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        cancel();
      }
    });
    yes.addEventListener("click", async () => {
      yes.disabled = no.disabled = true;
      try {
        const res = await request("DELETE", "/api/threads/" + encodeURIComponent(item.dataset.threadId) + "/");
        if (res.ok || res.status === 404) {
          if (item.dataset.threadId === openThread) {
            window.location.assign("/chat/");
            return;
          }
          const next = item.nextElementSibling || item.previousElementSibling;
          item.remove();
          const focusable = next && next.querySelector("a");
          if (focusable) focusable.focus();
          showEmpty();
          return;
        }
        error.textContent = message(res.data, res.status);
      } catch (e) {
        error.textContent = fmt(gettext("Could not delete: %(error)s"), { error: e.message });
      }
      error.hidden = false;
      yes.disabled = no.disabled = false;
    });
    item.appendChild(box);
    no.focus();
  }

  let refreshing = false;
  let shown = null; // the last list the server sent

  /* The list as the server has it now: chats made, renamed or deleted in another tab. */
  async function refresh() {
    // never under someone's hands: an open rename or delete, or focus inside the list
    if (refreshing || list.querySelector(".editing") || list.contains(document.activeElement)) return;
    refreshing = true;
    try {
      // the page of the list shown (?before=, its older chats) is the one fetched again
      const query = new URLSearchParams(location.search);
      query.set("partial", "threads");
      const res = await window.aguiFetch(location.pathname + "?" + query.toString(), {
        credentials: "same-origin", headers: { Accept: "text/html" },
      });
      if (!res.ok) return;
      const html = (await res.text()).trim();
      if (html === shown || list.querySelector(".editing") || list.contains(document.activeElement)) return;
      shown = html;
      list.innerHTML = html;
      if (window.aguiWhen) window.aguiWhen(list); // local times (chat.js)
      const current = openThread && list.querySelector('.thread-item[data-thread-id="' + CSS.escape(openThread) + '"]');
      if (current) applyTitle(current, titleOf(current)); // the header follows a rename made elsewhere
      showEmpty();
    } catch (e) {
      // offline for a moment: the list stays as it was, the next visit tries again
    } finally {
      refreshing = false;
    }
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh();
  });
  window.addEventListener("focus", refresh);

  window.aguiThreads = {
    titleIfUntitled(threadId, title) {
      const item = list.querySelector('.thread-item[data-thread-id="' + CSS.escape(String(threadId)) + '"]');
      if (item && !titleOf(item) && title) applyTitle(item, title);
    },
    refresh,
    // a chat deleted by the page itself (chat.js: an empty new chat whose first message was refused)
    forget(threadId) {
      const item = list.querySelector('.thread-item[data-thread-id="' + CSS.escape(String(threadId)) + '"]');
      if (item) item.remove();
      showEmpty();
    },
  };

  list.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-thread-act]");
    if (!button) return;
    const item = button.closest(".thread-item");
    if (!item) return;
    if (button.dataset.threadAct === "rename") startRename(item);
    else if (button.dataset.threadAct === "delete") startDelete(item);
  });
})();
