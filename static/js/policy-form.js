/*
 * policy-form.js — the policy console's draft form: with a mode in which nobody decides ("Never
 * ask", "Block") the approver and deadline fields say nothing, so they are hidden and the form
 * says "Who decides: nobody ..." instead. Their values stay in the form (and are saved as they are).
 */
(function () {
  "use strict";

  /* "Simulate the draft" is a whole-page round trip: the page it returns opened at its top, the result
     below the fold (an iPad's screen down). It opens at the result, its heading focused. */
  const SIMULATED = "agui.policy.simulated";
  const policyForm = document.getElementById("policy-form");
  if (policyForm) {
    policyForm.addEventListener("submit", (event) => {
      try {
        if (event.submitter && event.submitter.value === "simulate") sessionStorage.setItem(SIMULATED, location.pathname);
      } catch (e) {
        /* storage off: the page opens at its top */
      }
    });
  }
  let simulated = null;
  try {
    simulated = sessionStorage.getItem(SIMULATED);
    sessionStorage.removeItem(SIMULATED);
  } catch (e) {
    /* storage off */
  }
  const result = document.getElementById("sim-summary") && document.getElementById("sim-heading");
  if (simulated === location.pathname && result && !document.getElementById("policy-errors")) {
    result.tabIndex = -1;
    result.scrollIntoView({ block: "start" });
    result.focus({ preventScroll: true });
  }

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
