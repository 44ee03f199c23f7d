// The header's language picker. Its Apply button sends the form; changing the select does not (an
// arrow key on a closed select changes its value: WCAG 3.2.2). The page that comes back in the new
// language puts focus back on the select, where the person left it, instead of on <body>.
(function () {
  "use strict";
  const form = document.getElementById("language-form");
  if (!form) return;
  const select = form.querySelector("select");
  const KEY = "agui.language-applied";
  form.addEventListener("submit", () => {
    try {
      sessionStorage.setItem(KEY, select.value);
    } catch (e) {
      /* no storage: focus simply starts at the top */
    }
  });
  let applied = null;
  try {
    applied = sessionStorage.getItem(KEY);
    sessionStorage.removeItem(KEY);
  } catch (e) {
    /* as above */
  }
  if (applied && applied === select.value) select.focus(); // the page came back in the language sent
})();
