/*
 * net.js — window.aguiFetch(url, options): fetch, whose network failure (offline, the server out
 * of reach) is an Error with a sentence in the page's language instead of the browser's own words
 * ("Failed to fetch", "NetworkError when attempting to fetch resource."), which the pages show.
 * window.aguiJSON(res): the body of a reply that should be JSON; one that is not (a proxy's
 * "502 Bad Gateway" HTML page, a server's error page) is an Error with a sentence, never its markup.
 * window.aguiStatus(res or status): a refusal that says nothing for people (no JSON `message`) as a
 * sentence of what to do, never a bare "HTTP 502"; a reply that is the sign-in page says the session ended.
 * window.aguiOneAtATime(task): `task` (async) run by each call, never twice at once: calls while it
 * runs make one more run after it, not one each (a burst of notices, each asking the page to fetch again).
 */
(function () {
  "use strict";
  window.aguiOneAtATime = function (task) {
    let running = false;
    let again = false;
    return async function run() {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        await task();
      } catch (e) {
        /* the next call tries again */
      } finally {
        running = false;
        if (again) {
          again = false;
          run();
        }
      }
    };
  };

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

  // fetch follows a lapsed session's redirect: the reply is then the sign-in page, with 200
  const signedOut = (res) => Boolean(res.redirected && res.url && new URL(res.url).pathname === "/accounts/login/");

  window.aguiStatus = function (res) {
    const status = typeof res === "number" ? res : res.status;
    if (typeof res === "object" && signedOut(res)) {
      return gettext("You are signed out (the session ended): reload the page to sign in again.");
    }
    if (status === 401 || status === 403) return gettext("You may not do this (signed out, or no longer allowed): reload the page.");
    if (status === 404 || status === 410) return gettext("It is no longer there: reload the page.");
    if (status === 409) return gettext("It changed in the meantime: reload the page, then try again.");
    if (status === 413) return gettext("That is too large to send.");
    if (status === 429) return gettext("Too many tries in a short time: wait a moment, then try again.");
    if (status >= 500) return gettext("The server could not answer just now: try again in a moment.");
    return gettext("The server refused this: reload the page, then try again.");
  };

  // what is wrong with JSON a person typed, in a sentence: the parser's own words are English and
  // the engine's; only where it stopped (V8's "position N") is taken from them, as line and column
  window.aguiJSONProblem = function (text) {
    try {
      JSON.parse(text);
      return "";
    } catch (e) {
      const at = /position (\d+)/.exec(String(e && e.message));
      if (!at) return gettext("This is not valid JSON: check its quotes, commas and brackets.");
      const lines = text.slice(0, Number(at[1])).split("\n");
      return interpolate(gettext("This is not valid JSON near line %(line)s, column %(column)s: check its quotes, commas and brackets."),
        { line: lines.length, column: lines[lines.length - 1].length + 1 }, true);
    }
  };

  window.aguiJSON = async function (res) {
    if (signedOut(res)) throw new Error(window.aguiStatus(res));
    const text = await res.text();
    if (!text) return {};
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error(gettext("The server answered with an error page instead of a reply: try again in a moment."));
    }
  };
})();
