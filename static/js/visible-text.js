/*
 * Text-direction controls shown, never obeyed, and characters that draw nothing shown too
 * (agui_project/visible.py is the same rule on the server).
 *
 * U+202E in "Invoice \u202efdp.exe" makes the browser draw "Invoice exe.pdf". Wherever a page shows
 * what a requester or a model wrote (argument values, descriptions, reasons, feedback, tool results),
 * each bidi control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) is written out as
 * "⟨U+202E⟩" in a span.bidi-control, and the value is isolated (CSS unicode-bidi: isolate).
 *
 *   aguiVisible.fragment(text)    -> DocumentFragment (text nodes and marked spans) to append
 *   aguiVisible.set(node, text)   -> node.replaceChildren(fragment(text)): textContent's replacement
 *   aguiVisible.text(text)        -> plain string with the marks (attributes, notifications)
 *   aguiVisible.jsonEscapes(json) -> JSON text with "\u202e" escapes (the same value, for a textarea)
 *   aguiVisible.has(text)         -> whether there is any
 *   aguiVisible.invisibleOnly(text) -> whether what there is draws nothing (no text-direction control)
 */
(function () {
  // the text-direction controls (visible.py BIDI_CONTROLS) and the characters that draw nothing at all (INVISIBLE)
  const BIDI_SET = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c";
  const INVISIBLE_SET = "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2060-\u2064\u3164\ufeff\uffa0";
  const CONTROLS = new RegExp("[" + BIDI_SET + INVISIBLE_SET + "]", "g");
  const BIDI = new RegExp("[" + BIDI_SET + "]");
  const INVISIBLE = new RegExp("[" + INVISIBLE_SET + "]");

  function mark(ch) {
    return "⟨U+" + ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩";
  }

  function has(value) {
    CONTROLS.lastIndex = 0;
    return typeof value === "string" && CONTROLS.test(value);
  }

  function text(value) {
    return String(value).replace(CONTROLS, mark);
  }

  function fragment(value) {
    const s = String(value);
    const frag = document.createDocumentFragment();
    let last = 0;
    CONTROLS.lastIndex = 0;
    let m;
    while ((m = CONTROLS.exec(s)) !== null) {
      if (m.index > last) frag.appendChild(document.createTextNode(s.slice(last, m.index)));
      const span = document.createElement("span");
      span.className = "bidi-control";
      span.title = INVISIBLE.test(m[0]) ? gettext("An invisible character: shown here, not hidden")
        : gettext("A text-direction control character: shown here, not applied");
      span.textContent = mark(m[0]);
      frag.appendChild(span);
      last = m.index + 1;
    }
    if (last < s.length) frag.appendChild(document.createTextNode(s.slice(last)));
    return frag;
  }

  function set(node, value) {
    node.replaceChildren(fragment(value === undefined || value === null ? "" : value));
    return node;
  }

  function jsonEscapes(json) {
    return String(json).replace(CONTROLS, (ch) => "\\u" + ch.charCodeAt(0).toString(16).padStart(4, "0"));
  }

  function invisibleOnly(value) {  // holds characters that draw nothing, and no text-direction control
    return has(value) && !BIDI.test(String(value));
  }

  window.aguiVisible = { fragment, set, text, jsonEscapes, has, invisibleOnly };
})();
