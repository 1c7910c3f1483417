// The inbox's expiry countdown: each <time class="expiry" datetime="..."> is rewritten every
// second from its datetime, in the words tether.web.inbox.left renders on the server. The server's
// text is already correct; without JavaScript the page only stops counting. Rows the live stream
// swaps in are picked up on the next tick.
"use strict";
(function () {
  function left(seconds) {
    if (seconds <= 0) return "0 s";
    var whole = Math.floor(seconds);
    var days = Math.floor(whole / 86400), hours = Math.floor(whole % 86400 / 3600);
    var minutes = Math.floor(whole % 3600 / 60), secs = whole % 60;
    if (days) return days + " d " + hours + " h";
    if (hours) return hours + " h " + minutes + " min";
    if (minutes) return minutes + " min " + secs + " s";
    return secs + " s";
  }
  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("time.expiry[datetime]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("datetime")) / 1000;
      if (isNaN(at)) return;
      if (at <= now) {
        el.textContent = "expired";
        el.classList.add("bad");
      } else {
        el.textContent = "expires in " + left(at - now);
      }
    });
  }
  tick();
  setInterval(tick, 1000);
})();
