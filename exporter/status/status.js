// Refreshes the status page's content in place every data-refresh
// seconds, keeping the scroll position; without JavaScript a meta refresh
// reloads the page instead. A failed fetch greys the page until the next
// one succeeds.
(function () {
  "use strict";
  var secs = Number(document.body.dataset.refresh) || 5;
  function tick() {
    fetch(location.pathname, { cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var cur = document.querySelector("main");
        if (next && cur) cur.replaceWith(next);
        document.body.classList.remove("stale");
      })
      .catch(function () { document.body.classList.add("stale"); })
      .finally(function () { setTimeout(tick, secs * 1000); });
  }
  setTimeout(tick, secs * 1000);
})();
