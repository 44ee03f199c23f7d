/*
 * policy-live.js — the policy pages follow a change made elsewhere (another admin, another tab, the
 * API, the Django admin): the staff's inbox socket (nav-count.js) says "policy.changed". The list
 * draws its rows again; an edit page keeps the draft as typed and says who changed the policy under it
 * (a save then shows where the two differ first, policy_versions on the server).
 */
(function () {
  "use strict";

  const form = document.getElementById("policy-form");
  const list = document.getElementById("policies-table");
  let submitted = false; // this tab's own save: the page that follows says what became of it
  if (form) form.addEventListener("submit", () => { submitted = true; });

  function sayChanged(by) {
    const banner = document.getElementById("policy-changed-live");
    if (!banner || submitted) return;
    banner.querySelector("[data-said]").textContent = by
      ? interpolate(gettext("%(name)s just changed this policy."), { name: by }, true)
      : gettext("This policy was just changed elsewhere.");
    banner.hidden = false;
  }

  // changes during a fetch make one more, not one each; a failure waits for the next change or a reload
  const drawRows = window.aguiOneAtATime(async () => {
    const res = await window.aguiFetch(location.href, { credentials: "same-origin", cache: "no-store" });
    if (!res.ok || res.redirected) return;
    const fresh = new DOMParser().parseFromString(await res.text(), "text/html").querySelector("#policies-table tbody");
    if (fresh) list.tBodies[0].replaceWith(document.adoptNode(fresh));
  });

  document.addEventListener("agui:notice", (event) => {
    const notice = event.detail;
    if (notice.type !== "policy.changed" || !notice.policy) return;
    if (form && form.dataset.draftName === "policy." + notice.policy.tool_name) sayChanged(notice.policy.by);
    if (list) drawRows();
  });
})();
