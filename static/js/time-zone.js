/* The browser's own time zone, sent to the server as a cookie (people/zones.py COOKIE): its pages show
 * times in it while the person has chosen no zone on their settings page, and a signed-in person's
 * mails follow it (people.middleware.TimeZoneMiddleware, which ignores a name zoneinfo does not know).
 * Written only when it changes (a laptop that travelled); the page after this one uses it. */
(function () {
  "use strict";
  let zone;
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (e) {
    return;
  }
  // IANA names are letters, digits, "/", "_", "+", "-": nothing a cookie needs escaped
  if (typeof zone !== "string" || !/^[A-Za-z0-9_+\/-]{1,64}$/.test(zone)) return;
  if (document.cookie.split("; ").indexOf("agui_tz=" + zone) !== -1) return;
  document.cookie = "agui_tz=" + zone + "; path=/; max-age=31536000; samesite=lax" +
    (location.protocol === "https:" ? "; secure" : "");
})();
