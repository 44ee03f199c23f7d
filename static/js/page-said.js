// What the server said with a page it sent whole (a redirect's flash message, a form sent back with
// its errors): a status or alert already in the page when it loads is, in most screen readers, not
// read, and focus starts at <body>, far from an error. So, once the page has loaded: a form's error
// summary takes focus (it is read where the person now is, and Tab goes on to the fields), unless a
// page's own script already put focus somewhere; the flash messages are said in #page-said, a polite
// region present from the start (a region made and filled at once is often not read either).
(function () {
  "use strict";
  function run() {
    const error = Array.from(document.querySelectorAll("main .form-error[role=alert]"))
      .find((box) => !box.hidden && box.textContent.trim());
    const nobodyFocused = !document.activeElement || document.activeElement === document.body
      || document.activeElement === document.getElementById("main");
    if (error && nobodyFocused) {
      if (!error.hasAttribute("tabindex")) error.setAttribute("tabindex", "-1");
      error.focus();
    }
    const said = document.getElementById("page-said");
    const flashes = Array.from(document.querySelectorAll(".flash-messages .flash"))
      .map((li) => li.textContent.trim()).filter(Boolean);
    if (!said || !flashes.length) return;
    // after the page's first reading has begun: a change made during load is not announced
    setTimeout(() => { said.textContent = flashes.join(" "); }, 500);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
