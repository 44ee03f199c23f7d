/*
 * markdown.js — chat messages' Markdown -> DOM, with maintained libraries vendored in static/vendor/:
 * markdown-it renders (raw HTML off, so model output such as "<script>" or "<img onerror>" stays
 * literal text), DOMPurify then keeps only the tags and attributes listed below, whatever the
 * renderer produced. Loaded after both (templates/agents/chat.html); no CDN, so the page's CSP
 * (script-src 'self') covers them, and neither evaluates code.
 *
 * What it renders: paragraphs (a single newline is a line break), emphasis, `code`, fenced code
 * (an unterminated fence runs to the end, so streaming text renders sensibly), lists, headings
 * (two levels smaller, the chat's own headings stay above them), block quotes, tables, links and
 * bare URLs. Links open in a new tab with rel="noopener nofollow", and only http:, https: and
 * mailto: targets are links; anything else (javascript:, relative paths) stays text. An image
 * shows as "!" and a link to it: a model's reply never makes the browser fetch something.
 *
 * API: window.renderMarkdown(text) -> DocumentFragment
 */
(function () {
  "use strict";

  const SAFE_URL = /^(https?:|mailto:)/i;
  const md = window.markdownit({ html: false, linkify: true, breaks: true, typographer: false });
  md.disable("image");
  // markdown-it's default refuses javascript:/vbscript:/file:/data:; ours is an allow-list, and a
  // URL with whitespace or control characters inside ("java\nscript:") is refused outright.
  md.validateLink = (url) => SAFE_URL.test(url.trim()) && !/[\u0000-\u0020\u007f]/.test(url.trim());

  const defaultLinkOpen = md.renderer.rules.link_open || ((tokens, i, options, env, self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (tokens, i, options, env, self) => {
    tokens[i].attrSet("rel", "noopener nofollow");
    tokens[i].attrSet("target", "_blank");
    return defaultLinkOpen(tokens, i, options, env, self);
  };
  // no "\n" after <br>: the text the page shows is exactly the message's (see tidy below)
  md.renderer.rules.softbreak = () => "<br>";
  md.renderer.rules.hardbreak = () => "<br>";
  md.renderer.rules.heading_open = (tokens, i, options, env, self) => {
    tokens[i].tag = "h" + Math.min(6, Number(tokens[i].tag.slice(1)) + 2);
    return self.renderToken(tokens, i, options);
  };
  md.renderer.rules.heading_close = (tokens, i, options, env, self) => {
    tokens[i].tag = "h" + Math.min(6, Number(tokens[i].tag.slice(1)) + 2);
    return self.renderToken(tokens, i, options);
  };

  const PURIFY = {
    ALLOWED_TAGS: ["p", "br", "strong", "em", "s", "code", "pre", "ul", "ol", "li", "h3", "h4", "h5", "h6", "hr",
      "blockquote", "a", "table", "thead", "tbody", "tr", "th", "td"],
    ALLOWED_ATTR: ["href", "rel", "target", "start"],  // no style: the CSP refuses inline styles (table alignment)
    RETURN_DOM_FRAGMENT: true,
  };
  // the same link allow-list once more, on what is left after sanitising (DOMPurify's own URI rule
  // also vets rel and target values, so it keeps its default and the allow-list is applied here)
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && !SAFE_URL.test(node.getAttribute("href") || "")) node.removeAttribute("href");
  });
  /* markdown-it lays its HTML out with a newline after each block; outside <pre> (where newlines
   * are the content) those are only layout, and they would show in the message's text. */
  function tidy(frag) {
    const walker = document.createTreeWalker(frag, NodeFilter.SHOW_TEXT);
    const drop = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement && node.parentElement.closest("pre")) continue;
      node.data = node.data.replace(/\n/g, "");
      if (!node.data) drop.push(node);
    }
    for (const node of drop) node.remove();
    return frag;
  }

  function renderMarkdown(text) {
    const html = md.render(String(text == null ? "" : text));
    return tidy(DOMPurify.sanitize(html, PURIFY));
  }

  window.renderMarkdown = renderMarkdown;
})();
