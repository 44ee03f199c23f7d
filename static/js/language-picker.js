// The header's language picker: choosing a language sends the form (its button is in a
// <noscript>, for pages without JavaScript).
(function () {
  "use strict";
  const form = document.getElementById("language-form");
  if (!form) return;
  const select = form.querySelector("select");
  select.addEventListener("change", () => form.submit());
})();
