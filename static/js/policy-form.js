/*
 * policy-form.js — the policy console's draft form: with a mode in which nobody decides ("Never
 * ask", "Block") the approver and deadline fields say nothing, so they are hidden and the form
 * says "Who decides: nobody ..." instead. Their values stay in the form (and are saved as they are).
 */
(function () {
  "use strict";

  const mode = document.getElementById("p-mode");
  const note = document.getElementById("p-nobody");
  const data = document.getElementById("nobody-decides");
  if (!mode || !note || !data) return;
  let nobodyByMode = {};
  try {
    nobodyByMode = JSON.parse(data.textContent);
  } catch (e) {
    return;
  }

  function update() {
    const nobody = nobodyByMode[mode.value] || "";
    for (const node of document.querySelectorAll("[data-review-field]")) node.hidden = Boolean(nobody);
    note.hidden = !nobody;
    note.querySelector("span").textContent = nobody;
  }

  mode.addEventListener("change", update);
  update();
  window.addEventListener("pageshow", update); // on Back, Chromium restores the mode chosen after this ran
})();
