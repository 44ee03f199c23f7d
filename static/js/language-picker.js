// The header's language picker: choosing a language sends the form (the button is for pages
// without JavaScript).
(function () {
  "use strict";
  const form = document.getElementById("language-form");
  if (!form) return;
  const select = form.querySelector("select");
  const button = form.querySelector(".language-apply");
  if (button) button.hidden = true;
  select.addEventListener("change", () => form.submit());
})();
