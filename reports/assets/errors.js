// Any uncaught error or failed load shows as a red bar at the top of the page
// (and as #locklab-js-error, which the browser test looks for).
(function () {
  "use strict";
  var errs = [];
  function show() {
    var d = document.getElementById("locklab-js-error");
    if (!d) {
      d = document.createElement("div");
      d.id = "locklab-js-error";
      d.className = "js-error";
      var parent = document.body || document.documentElement;
      parent.insertBefore(d, parent.firstChild);
    }
    d.textContent = "JavaScript error in this report: " + errs.join(" | ");
  }
  function mark(msg) {
    errs.push(String(msg));
    if (document.body) { show(); } else { document.addEventListener("DOMContentLoaded", show); }
  }
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) { mark("cannot load " + (t.src || t.href)); return; }
    mark(e.message || "unknown error");
  }, true);
  window.addEventListener("unhandledrejection", function (e) { mark("unhandled rejection: " + e.reason); });
})();
