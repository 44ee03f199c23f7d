/*
 * field-limits.js — a field's maxlength cuts what is pasted or dropped into it without a word
 * (50,000 characters pasted into the chat become its 20,000): every such field, on every page, says
 * so beside itself (role=status, tied by aria-describedby) until what it holds fits again.
 */
(function () {
  "use strict";

  function inserted(event) {
    if (!event.inputType || !event.inputType.startsWith("insert")) return "";
    if (typeof event.data === "string") return event.data;
    return event.dataTransfer ? event.dataTransfer.getData("text/plain") : "";
  }

  function note(field, show) {
    const id = (field.id || "field") + "-limit";
    let p = document.getElementById(id);
    if (!show) {
      if (p) p.hidden = true;
      return;
    }
    if (!p) {
      p = document.createElement("p");
      p.id = id;
      p.className = "field-help field-limit";
      p.setAttribute("role", "status");
      field.insertAdjacentElement("afterend", p);
      const described = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
      if (!described.includes(id)) field.setAttribute("aria-describedby", described.concat(id).join(" "));
    }
    p.textContent = interpolate(gettext("Only the first %(max)s characters fit here: the rest of what you put in was left out."),
      { max: field.maxLength }, true);
    p.hidden = false;
  }

  document.addEventListener("beforeinput", (event) => {
    const field = event.target;
    if (!(field instanceof HTMLTextAreaElement || field instanceof HTMLInputElement) || !(field.maxLength > 0)) return;
    const text = inserted(event);
    const replaced = (field.selectionEnd || 0) - (field.selectionStart || 0);
    // said now: a field already full takes nothing, and then no input event follows
    if (text && text.length > field.maxLength - (field.value.length - replaced)) note(field, true);
  }, true);

  document.addEventListener("input", (event) => {
    const field = event.target;
    if (!(field instanceof HTMLTextAreaElement || field instanceof HTMLInputElement) || !(field.maxLength > 0)) return;
    if (field.value.length < field.maxLength) note(field, false);
  }, true);
})();
