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
  // the text-direction controls (visible.py BIDI_CONTROLS), the characters that draw nothing at all (INVISIBLE:
  // default-ignorables, tags, control characters, the line and paragraph separators), variation selectors
  // after another one (SELECTORS), and a region's flag, whose tags are left as they are (FLAG)
  const BIDI_SET = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c";
  const INVISIBLE_SET = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f" +
    "\u200b\u2028\u2029\u2060-\u2065\u206a-\u206f\u3164\ufeff\uffa0\ufff0-\ufffb\\u{1bca0}-\\u{1bca3}" +
    "\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e00ff}\\u{e01f0}-\\u{e0fff}";
  const SELECTORS = "\ufe00-\ufe0f\\u{e0100}-\\u{e01ef}";
  const FLAG = "\\u{1f3f4}[\\u{e0030}-\\u{e0039}\\u{e0061}-\\u{e007a}]{3,6}\\u{e007f}";
  const CONTROLS = new RegExp(FLAG + "|[" + BIDI_SET + INVISIBLE_SET + "]|(?<=[" + SELECTORS + "])[" + SELECTORS + "]", "gu");
  const BIDI = new RegExp("[" + BIDI_SET + "]", "u");

  function mark(ch) {
    return "⟨U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩";
  }

  function single(match) {  // one character to write out, not a flag left as it is
    return [...match].length === 1;
  }

  function controls(value) {
    return [...String(value).matchAll(CONTROLS)].filter((m) => single(m[0]));
  }

  function has(value) {
    return typeof value === "string" && controls(value).length > 0;
  }

  function text(value) {
    return String(value).replace(CONTROLS, (m) => (single(m) ? mark(m) : m));
  }

  function fragment(value) {
    const s = String(value);
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of controls(s)) {
      if (m.index > last) frag.appendChild(document.createTextNode(s.slice(last, m.index)));
      const span = document.createElement("span");
      span.className = "bidi-control";
      span.title = BIDI.test(m[0]) ? gettext("A text-direction control character: shown here, not applied")
        : gettext("An invisible character: shown here, not hidden");
      span.textContent = mark(m[0]);
      frag.appendChild(span);
      last = m.index + m[0].length;
    }
    if (last < s.length) frag.appendChild(document.createTextNode(s.slice(last)));
    return frag;
  }

  function set(node, value) {
    node.replaceChildren(fragment(value === undefined || value === null ? "" : value));
    return node;
  }

  function escape(ch) {  // its JSON escape: a character past the BMP as its UTF-16 pair
    let out = "";
    for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
    return out;
  }

  function jsonEscapes(json) {
    return String(json).replace(CONTROLS, (m) => (single(m) ? escape(m) : m));
  }

  function invisibleOnly(value) {  // holds characters that draw nothing, and no text-direction control
    return has(value) && !BIDI.test(String(value));
  }

  window.aguiVisible = { fragment, set, text, jsonEscapes, has, invisibleOnly };
})();
