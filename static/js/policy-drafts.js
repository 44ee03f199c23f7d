/*
 * policy-drafts.js — the policy console's draft kept for the tab by drafts.js, as the request page
 * keeps a reviewer's: a form sent after the session lapsed goes to the sign-in page, and what the
 * admin typed is put back on the policy page that follows. Put back only onto the policy it was
 * typed over (the fields as the server drew them): a policy changed since is not overwritten.
 * A page that shows what was sent (a refusal, the simulator) keeps the draft; the saved page forgets it.
 */
(function () {
  "use strict";
  const DRAFTS = window.aguiDrafts;
  const form = document.getElementById("policy-form");
  if (!DRAFTS || !form || !form.dataset.draftName) return;
  const name = form.dataset.draftName;
  const SKIP = new Set(["csrfmiddlewaretoken", "action", "allowed_decisions_shown"]);

  function controls() {
    return [...form.elements].filter((c) => c.name && !SKIP.has(c.name) && c.type !== "submit");
  }

  function values() {
    const out = {};
    for (const c of controls()) {
      if (c.type === "checkbox") {
        out[c.name] = out[c.name] || [];
        if (c.checked) out[c.name].push(c.value);
      } else out[c.name] = c.value;
    }
    return out;
  }

  function restore(fields) {
    for (const c of controls()) {
      if (!(c.name in fields)) continue;
      if (c.type === "checkbox") c.checked = fields[c.name].includes(c.value);
      else c.value = fields[c.name];
    }
    const load = document.getElementById("json-to-builder"); // the rule builder reads the JSON again
    if (load) load.click();
    document.getElementById("p-mode").dispatchEvent(new Event("change")); // policy-form.js shows its fields
  }

  function say(text) {
    const note = document.createElement("p");
    note.className = "banner";
    note.id = "draft-note";
    note.setAttribute("role", "status");
    note.textContent = text;
    form.insertAdjacentElement("beforebegin", note);
  }

  const drawn = JSON.stringify(values()); // the policy as the server drew it, before anything is put back
  let kept = DRAFTS.read(name);
  let base = drawn;
  if (form.hasAttribute("data-draft-done")) kept = null; // saved: nothing left to keep
  else if (kept && form.hasAttribute("data-draft-echo")) base = kept.base; // the page shows what was sent
  else if (kept && JSON.stringify(kept.fields) !== drawn) {
    if (kept.base === drawn) {
      restore(kept.fields);
      say(gettext("What you typed here before was put back."));
    } else {
      say(gettext("The policy changed since you edited it: your draft was not put back."));
      kept = null;
    }
  }

  const save = (sent) => {
    const now = values();
    const changed = JSON.stringify(now) !== base;
    DRAFTS.write(name, changed || sent ? { base, fields: now, sent } : null);
  };
  if (!kept) DRAFTS.write(name, null);
  save(false);
  form.addEventListener("input", () => save(false));
  form.addEventListener("change", () => save(false));
  form.addEventListener("click", () => save(false)); // the rule builder's add, move and remove buttons
  // registered after rule-builder.js wrote the JSON it stands for: what is kept is what is sent
  form.addEventListener("submit", (event) => {
    if (!event.defaultPrevented) save(true);
  });
})();
