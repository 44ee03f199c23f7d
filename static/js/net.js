/*
 * net.js — window.aguiFetch(url, options): fetch, whose network failure (offline, the server out
 * of reach) is an Error with a sentence in the page's language instead of the browser's own words
 * ("Failed to fetch", "NetworkError when attempting to fetch resource."), which the pages show.
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
})();
