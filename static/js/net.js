/*
 * net.js — window.aguiFetch(url, options): fetch, whose network failure (offline, the server out
 * of reach) is an Error with a sentence in the page's language instead of the browser's own words
 * ("Failed to fetch", "NetworkError when attempting to fetch resource."), which the pages show.
 * window.aguiJSON(res): the body of a reply that should be JSON; one that is not (a proxy's
 * "502 Bad Gateway" HTML page, a server's error page) is an Error with a sentence, never its markup.
 */
(function () {
  "use strict";
  window.aguiFetch = async function (url, options) {
    try {
      return await fetch(url, options);
    } catch (e) {
      if (e instanceof TypeError) {
        throw new Error(gettext("Could not reach the server: check your connection and try again."));
      }
      throw e; // an abort is the caller's own
    }
  };

  window.aguiJSON = async function (res) {
    const text = await res.text();
    if (!text) return {};
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error(gettext("The server answered with an error page instead of a reply: try again in a moment."));
    }
  };
})();
