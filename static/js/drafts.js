/*
 * drafts.js — what a person typed and has not sent, kept for this tab (sessionStorage), so that a
 * reload, Back, or the sign-in a lapsed session asks for does not lose it. A draft belongs to the
 * signed-in user: another person signing in on the same tab never sees it, and Log out forgets them.
 *
 * window.aguiDrafts.read(name) -> value | null; write(name, value) (null forgets); names(prefix).
 * Called from the page scripts at the end of <body> (the user's name is in the header by then).
 */
(function () {
  "use strict";
  const PREFIX = "agui.draft.";

  function store() {
    try {
      return window.sessionStorage;
    } catch (e) {
      return null; // storage switched off: drafts are only not kept
    }
  }

  function owner() {
    const node = document.querySelector(".site-user .username");
    return node ? node.textContent.trim() : "";
  }

  function key(name) {
    return PREFIX + owner() + ":" + name;
  }

  window.aguiDrafts = {
    read(name) {
      const s = store();
      if (!s || !owner()) return null;
      try {
        return JSON.parse(s.getItem(key(name)));
      } catch (e) {
        return null;
      }
    },
    write(name, value) {
      const s = store();
      if (!s || !owner()) return;
      try {
        if (value === null || value === undefined) s.removeItem(key(name));
        else s.setItem(key(name), JSON.stringify(value));
      } catch (e) {
        /* over the tab's quota: this draft is not kept, the page still works */
      }
    },
    names(prefix) {
      const s = store();
      if (!s || !owner()) return [];
      const head = key(prefix || "");
      const out = [];
      for (let i = 0; i < s.length; i++) {
        const k = s.key(i);
        if (k && k.startsWith(head)) out.push(k.slice(key("").length));
      }
      return out;
    },
  };

  document.addEventListener("submit", (event) => {
    if (!event.target.classList || !event.target.classList.contains("logout-form")) return;
    const s = store();
    if (!s) return;
    for (let i = s.length - 1; i >= 0; i--) {
      const k = s.key(i);
      if (k && k.startsWith(PREFIX)) s.removeItem(k);
    }
  });
})();
