/*
 * markdown.js — a tiny, safe Markdown -> DOM renderer for chat messages.
 *
 * It builds DOM nodes only (createElement / textContent); it never produces or parses HTML, so
 * model output such as "<script>" or "<img onerror>" shows up as literal text.
 *
 * Supported: paragraphs (single newlines become <br>), **bold** / __bold__, *italic* / _italic_,
 * `code`, fenced code blocks (``` or ~~~, an unterminated fence runs to the end so streaming text
 * renders sensibly), bullet and numbered lists (nested by indentation), headings (#..######,
 * rendered two levels smaller), block quotes, [links](url) and bare http(s) URLs. Links get
 * rel="noopener nofollow" and only http:, https: and mailto: targets; any other link renders as
 * its text.
 *
 * API: window.renderMarkdown(text) -> DocumentFragment
 */
(function () {
  "use strict";

  const SAFE_PROTOCOL = /^(https?:|mailto:)/i;
  const ESCAPABLE = "\\`*_{}[]()#+-.!<>~|\"'";

  function safeHref(raw) {
    const url = String(raw || "").trim();
    if (!SAFE_PROTOCOL.test(url)) return null;
    // Reject control characters and whitespace inside the URL (e.g. "java\nscript:" tricks).
    if (/[\u0000-\u0020\u007f]/.test(url)) return null;
    return url;
  }

  function makeLink(href, parent, label) {
    const a = document.createElement("a");
    a.href = href;
    a.rel = "noopener nofollow";
    a.target = "_blank";
    if (typeof label === "string") a.textContent = label;
    parent.appendChild(a);
    return a;
  }

  function isSpace(ch) {
    return ch === undefined || ch === "" || /\s/.test(ch);
  }

  function isWordChar(ch) {
    return ch !== undefined && /[\p{L}\p{N}]/u.test(ch);
  }

  /* Find the closing emphasis delimiter `delim` starting the search at `from`. */
  function findClose(src, delim, from) {
    let j = from;
    while (j < src.length) {
      const k = src.indexOf(delim, j);
      if (k < 0) return -1;
      if (src[k - 1] === "\\") { j = k + 1; continue; }
      // The closer must follow a non-space character.
      if (isSpace(src[k - 1])) { j = k + 1; continue; }
      if (delim.length === 1) {
        // A single "*" must not be half of a "**" pair.
        if (src[k + 1] === delim || src[k - 1] === delim) { j = k + 2; continue; }
        // "_" closes only at a word boundary (snake_case stays literal).
        if (delim === "_" && isWordChar(src[k + 1])) { j = k + 1; continue; }
      }
      return k;
    }
    return -1;
  }

  /* Parse inline Markdown in `src`, appending nodes to `parent`. */
  function parseInline(src, parent, depth) {
    depth = depth || 0;
    let buf = "";
    const flush = () => {
      if (buf) { parent.appendChild(document.createTextNode(buf)); buf = ""; }
    };
    let i = 0;
    while (i < src.length) {
      const ch = src[i];

      // Backslash escapes.
      if (ch === "\\" && i + 1 < src.length && ESCAPABLE.includes(src[i + 1])) {
        buf += src[i + 1];
        i += 2;
        continue;
      }

      // Line breaks inside a paragraph.
      if (ch === "\n") {
        flush();
        parent.appendChild(document.createElement("br"));
        i += 1;
        continue;
      }

      // Code spans: a run of N backticks closed by a run of exactly N.
      if (ch === "`") {
        let n = 0;
        while (src[i + n] === "`") n += 1;
        const fence = "`".repeat(n);
        let k = src.indexOf(fence, i + n);
        while (k >= 0 && src[k + n] === "`") {
          let m = k;
          while (src[m] === "`") m += 1;
          k = src.indexOf(fence, m);
        }
        if (k >= 0) {
          flush();
          const code = document.createElement("code");
          let text = src.slice(i + n, k);
          if (/^ .*[^ ].* $/.test(text)) text = text.slice(1, -1);
          code.textContent = text;
          parent.appendChild(code);
          i = k + n;
          continue;
        }
        buf += fence;
        i += n;
        continue;
      }

      // Links: [text](url "title")
      if (ch === "[" && depth < 4) {
        const close = findBracket(src, i);
        if (close > 0 && src[close + 1] === "(") {
          const end = findParen(src, close + 1);
          if (end > 0) {
            const inside = src.slice(close + 2, end).trim();
            const url = inside.split(/\s+/)[0].replace(/^<|>$/g, "");
            const label = src.slice(i + 1, close);
            flush();
            const href = safeHref(url);
            if (href) {
              const a = makeLink(href, parent);
              parseInline(label, a, depth + 1);
            } else {
              const span = document.createElement("span");
              parseInline(label, span, depth + 1);
              parent.appendChild(span);
            }
            i = end + 1;
            continue;
          }
        }
      }

      // Autolinks <https://...> and bare URLs.
      if (ch === "<") {
        const m = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(src.slice(i));
        if (m) {
          flush();
          const href = safeHref(m[1]);
          if (href) makeLink(href, parent, m[1]); else buf += m[0];
          i += m[0].length;
          continue;
        }
      }
      if ((ch === "h" || ch === "H") && !isWordChar(src[i - 1])) {
        const m = /^https?:\/\/[^\s<>()]+(?:\([^\s<>()]*\)[^\s<>()]*)*/i.exec(src.slice(i));
        if (m) {
          let url = m[0];
          const trail = /[.,;:!?'"*_~]+$/.exec(url);
          if (trail) url = url.slice(0, -trail[0].length);
          const href = safeHref(url);
          if (href && url.length > 8) {
            flush();
            makeLink(href, parent, url);
            i += url.length;
            continue;
          }
        }
      }

      // Strong: **text** or __text__
      if ((ch === "*" || ch === "_") && src[i + 1] === ch && depth < 8) {
        const delim = ch + ch;
        const leftOk = !isSpace(src[i + 2]) && (ch === "*" || !isWordChar(src[i - 1]));
        if (leftOk) {
          const k = findClose(src, delim, i + 2);
          if (k > i + 2) {
            flush();
            const strong = document.createElement("strong");
            parseInline(src.slice(i + 2, k), strong, depth + 1);
            parent.appendChild(strong);
            i = k + 2;
            continue;
          }
        }
        buf += delim;
        i += 2;
        continue;
      }

      // Emphasis: *text* or _text_
      if ((ch === "*" || ch === "_") && depth < 8) {
        const leftOk = !isSpace(src[i + 1]) && (ch === "*" || !isWordChar(src[i - 1]));
        if (leftOk) {
          const k = findClose(src, ch, i + 1);
          if (k > i + 1) {
            flush();
            const em = document.createElement("em");
            parseInline(src.slice(i + 1, k), em, depth + 1);
            parent.appendChild(em);
            i = k + 1;
            continue;
          }
        }
      }

      buf += ch;
      i += 1;
    }
    flush();
  }

  /* Index of the ")" matching the "(" at `open` (balanced, on one line), or -1. */
  function findParen(src, open) {
    let level = 0;
    for (let j = open; j < src.length; j += 1) {
      const c = src[j];
      if (c === "\\") { j += 1; continue; }
      if (c === "\n") return -1;
      if (c === "(") level += 1;
      else if (c === ")") {
        level -= 1;
        if (level === 0) return j;
      }
    }
    return -1;
  }

  /* Index of the "]" matching the "[" at `open`, or -1. */
  function findBracket(src, open) {
    let level = 0;
    for (let j = open; j < src.length; j += 1) {
      const c = src[j];
      if (c === "\\") { j += 1; continue; }
      if (c === "`") {
        const k = src.indexOf("`", j + 1);
        if (k > 0) { j = k; continue; }
      }
      if (c === "[") level += 1;
      else if (c === "]") {
        level -= 1;
        if (level === 0) return j;
      } else if (c === "\n" && src[j + 1] === "\n") return -1;
    }
    return -1;
  }

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
  const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;

  function indentWidth(s) {
    let w = 0;
    for (const c of s) w += c === "\t" ? 4 : 1;
    return w;
  }

  /* Parse block-level Markdown from `lines`, appending to `parent`. */
  function parseBlocks(lines, parent, depth) {
    depth = depth || 0;
    let i = 0;
    let para = null;
    // Stack of open lists: {indent, el, li, ordered}
    let lists = [];

    const endPara = () => {
      if (para !== null) {
        const p = document.createElement("p");
        parseInline(para.join("\n"), p, 0);
        parent.appendChild(p);
        para = null;
      }
    };
    const endLists = () => {
      lists.forEach((l) => flushItem(l));
      lists = [];
    };
    const flushItem = (l) => {
      if (l.li && l.text !== null) {
        const holder = document.createElement("span");
        parseInline(l.text.join("\n"), holder, 0);
        // Put the item's text before any nested list it already contains.
        l.li.insertBefore(holder, l.li.firstChild);
        l.text = null;
      }
    };

    while (i < lines.length) {
      const line = lines[i];

      // Fenced code block.
      const fence = FENCE.exec(line);
      if (fence) {
        endPara();
        endLists();
        const marker = fence[1];
        const lang = (fence[2] || "").replace(/[^\w+-]/g, "");
        const body = [];
        i += 1;
        while (i < lines.length) {
          const t = lines[i].trim();
          if (t.startsWith(marker[0].repeat(marker.length)) && /^[`~]+$/.test(t) && t[0] === marker[0]) {
            i += 1;
            break;
          }
          body.push(lines[i]);
          i += 1;
        }
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        if (lang) code.className = "language-" + lang;
        code.textContent = body.join("\n");
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }

      if (!line.trim()) {
        endPara();
        // A blank line inside a list keeps the list open only if an item follows.
        let j = i + 1;
        while (j < lines.length && !lines[j].trim()) j += 1;
        if (lists.length && !(j < lines.length && (LIST_ITEM.test(lines[j]) || /^\s{2,}\S/.test(lines[j])))) {
          endLists();
        }
        i += 1;
        continue;
      }

      const item = LIST_ITEM.exec(line);
      if (item && !RULE.test(line)) {
        endPara();
        const indent = indentWidth(item[1]);
        const ordered = /\d/.test(item[2]);
        // Close lists that are deeper than this item.
        while (lists.length && indent < lists[lists.length - 1].indent) {
          flushItem(lists.pop());
        }
        let top = lists[lists.length - 1];
        if (top && indent > top.indent + 1 && top.li) {
          // Nested list inside the current item.
          flushItem(top);
          const el = document.createElement(ordered ? "ol" : "ul");
          top.li.appendChild(el);
          top = { indent, el, li: null, text: null, ordered };
          lists.push(top);
        } else if (!top || top.ordered !== ordered) {
          if (top) {
            flushItem(lists.pop());
          }
          const el = document.createElement(ordered ? "ol" : "ul");
          if (ordered) {
            const start = parseInt(item[2], 10);
            if (start !== 1 && Number.isFinite(start)) el.start = start;
          }
          (lists.length ? lists[lists.length - 1].li || parent : parent).appendChild(el);
          top = { indent, el, li: null, text: null, ordered };
          lists.push(top);
        }
        flushItem(top);
        top.li = document.createElement("li");
        top.text = [item[3]];
        top.el.appendChild(top.li);
        i += 1;
        continue;
      }

      // Continuation line of a list item.
      if (lists.length && para === null && /^\s+\S/.test(line)) {
        const top = lists[lists.length - 1];
        if (top.text !== null) {
          top.text.push(line.trim());
          i += 1;
          continue;
        }
      }
      if (lists.length) endLists();

      const heading = HEADING.exec(line);
      if (heading) {
        endPara();
        const level = Math.min(6, heading[1].length + 2);
        const h = document.createElement("h" + level);
        parseInline(heading[2], h, 0);
        parent.appendChild(h);
        i += 1;
        continue;
      }

      if (RULE.test(line) && para === null) {
        parent.appendChild(document.createElement("hr"));
        i += 1;
        continue;
      }

      const quote = QUOTE.exec(line);
      if (quote && depth < 4) {
        endPara();
        const body = [];
        while (i < lines.length) {
          const q = QUOTE.exec(lines[i]);
          if (!q) break;
          body.push(q[1]);
          i += 1;
        }
        const bq = document.createElement("blockquote");
        parseBlocks(body, bq, depth + 1);
        parent.appendChild(bq);
        continue;
      }

      if (para === null) para = [];
      para.push(line.replace(/^\s+/, ""));
      i += 1;
    }
    endPara();
    endLists();
  }

  function renderMarkdown(text) {
    const frag = document.createDocumentFragment();
    const src = String(text == null ? "" : text).replace(/\r\n?/g, "\n");
    parseBlocks(src.split("\n"), frag, 0);
    return frag;
  }

  window.renderMarkdown = renderMarkdown;
})();
