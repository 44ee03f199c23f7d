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
 * window.aguiKeepAlive(ws, onDead): watches an open WebSocket for going quiet without closing.
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

  /* A socket can die without closing: a phone moving from Wi-Fi to mobile data, a laptop waking
     up, a proxy that dropped the connection. No FIN reaches the browser, which calls the socket
     open for minutes while nothing arrives, so a page looked live and missed everything. The
     browser's API has no ping of its own (Daphne's protocol pings keep only the server's side
     honest), so the page asks: a {"type": "ping"} frame, which both sockets answer with a pong,
     when the network changes (offline, online), when the page is shown again or restored from the
     back/forward cache, and after
     `quiet` ms with nothing received. Nothing back within `answer` ms: onDead(ws), once, and the
     page opens a new socket as after a close (the old one is closed; its close event may come late).
     Returns {heard()}: the page's message handler calls it for every frame (the pong included). */
  window.aguiKeepAlive = function (ws, onDead) {
    const times = Object.assign({ quiet: 25000, answer: 5000 }, window.aguiKeepAliveMs || {});
    let lastHeard = Date.now();
    let deadline = null;
    let over = false;
    const stop = () => {
      over = true;
      clearTimeout(deadline);
      clearInterval(quietCheck);
      window.removeEventListener("online", probe);
      window.removeEventListener("offline", probe);
      window.removeEventListener("pageshow", probe);
      document.removeEventListener("visibilitychange", shown);
    };
    function probe() {
      if (over || deadline || ws.readyState !== WebSocket.OPEN) return;
      try {
        ws.send(JSON.stringify({ type: "ping" }));
      } catch (e) {
        /* a socket closing: its close event follows */
      }
      deadline = setTimeout(() => {
        if (over) return;
        stop();
        try {
          ws.close();
        } catch (e) {
          /* already closing */
        }
        onDead(ws);
      }, times.answer);
    }
    function shown() {
      if (document.visibilityState === "visible") probe();
    }
    const quietCheck = setInterval(() => {
      if (Date.now() - lastHeard >= times.quiet) probe();
    }, Math.min(times.quiet, 5000));
    window.addEventListener("online", probe);
    window.addEventListener("offline", probe);
    window.addEventListener("pageshow", probe);
    document.addEventListener("visibilitychange", shown);
    ws.addEventListener("close", stop);
    return {
      heard() {
        lastHeard = Date.now();
        clearTimeout(deadline);
        deadline = null;
      },
    };
  };
})();
