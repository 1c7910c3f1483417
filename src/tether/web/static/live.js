// tether console: live updates over server-sent events (served by the package; CSP allows only 'self').
// An element with data-live-source="/events/..." and data-live-fetch="URL" re-fetches URL when an
// event arrives: for `journal` events the fragment is appended and data-after advanced (the fetch
// asks for after=<data-after>); for `inbox` and `sessions` events the element's content is replaced.
// Once the stream has taken its first look (its `ready` event), the element gets data-live-ready
// and is fetched once, so a change made between the page's rendering and that look is not missed.
(function () {
  "use strict";

  function lastSeq(element, fallback) {
    let highest = fallback;
    element.querySelectorAll("[data-seq]").forEach(function (node) {
      const seq = parseInt(node.getAttribute("data-seq"), 10);
      if (!isNaN(seq) && seq > highest) { highest = seq; }
    });
    return highest;
  }

  function withParam(url, key, value) {
    return url + (url.indexOf("?") === -1 ? "?" : "&") + key + "=" + encodeURIComponent(value);
  }

  function watch(element) {
    const source = new EventSource(element.getAttribute("data-live-source"));
    let busy = false;
    let again = false;
    let newest = parseInt(element.getAttribute("data-after") || "0", 10);

    function refresh(append) {
      if (busy) { again = true; return; }
      busy = true;
      let url = element.getAttribute("data-live-fetch");
      if (append) { url = withParam(url, "after", element.getAttribute("data-after") || "0"); }
      fetch(url, {credentials: "same-origin", headers: {"Accept": "text/html"}})
        .then(function (response) {
          if (!response.ok) { throw new Error(url + ": " + response.status); }
          return response.text();
        })
        .then(function (html) {
          if (append) {
            const holder = document.createElement(element.tagName === "TBODY" ? "tbody" : "div");
            holder.innerHTML = html;
            const after = lastSeq(holder, newest);
            while (holder.firstChild) { element.appendChild(holder.firstChild); }
            element.setAttribute("data-after", String(after));
          } else {
            element.innerHTML = html;
          }
          element.dispatchEvent(new CustomEvent("live:updated", {bubbles: true}));
        })
        .catch(function (error) { console.warn("tether live update:", error.message); })
        .finally(function () {
          busy = false;
          if (again) { again = false; refresh(append); }
        });
    }

    // `ready`: the stream has taken its first look; what changed between the page's rendering
    // and that look is fetched now (later changes arrive as events), so nothing falls between.
    source.addEventListener("ready", function () {
      element.setAttribute("data-live-ready", "");
      refresh(element.hasAttribute("data-after"));
    });
    source.addEventListener("journal", function (event) {
      const seq = JSON.parse(event.data).seq;
      if (seq > newest) { newest = seq; }
      refresh(true);
    });
    source.addEventListener("inbox", function () { refresh(false); });
    source.addEventListener("sessions", function () { refresh(false); });
    window.addEventListener("pagehide", function () { source.close(); });
  }

  function start() {
    document.querySelectorAll("[data-live-source][data-live-fetch]").forEach(watch);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
