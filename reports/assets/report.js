// Progressive enhancement only: without JavaScript every table is complete
// and the SVG timeline is all there is.
(function () {
  "use strict";
  // Event log filter: every word must occur in the row (case-insensitive).
  Array.prototype.forEach.call(document.querySelectorAll("[data-log]"), function (log) {
    var controls = log.querySelector("[data-log-controls]");
    var input = log.querySelector("[data-log-filter]");
    var actor = log.querySelector("[data-log-actor]");
    var hot = log.querySelector("[data-log-hot]");
    var count = log.querySelector("[data-log-count]");
    var rows = Array.prototype.slice.call(log.querySelectorAll("tbody tr"));
    var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
    var actors = rows.map(function (r) { return r.cells[1] ? r.cells[1].textContent : ""; });
    controls.hidden = false;
    var timer = 0;
    function apply() {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var who = actor.value, onlyHot = hot.checked, shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var ok = (!who || actors[i] === who) && (!onlyHot || rows[i].className !== "");
        for (var j = 0; ok && j < words.length; j++) { ok = texts[i].indexOf(words[j]) !== -1; }
        rows[i].style.display = ok ? "" : "none";
        if (ok) { shown++; }
      }
      count.textContent = shown + " of " + rows.length + " events";
    }
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(apply, 80); });
    actor.addEventListener("change", apply);
    hot.addEventListener("change", apply);
    apply();
  });

  // Interactive charts, when the local ECharts copy was inlined.
  var charts = [];
  if (window.echarts) {
    Array.prototype.forEach.call(document.querySelectorAll("script[data-echarts-for]"), function (s) {
      var el = document.getElementById(s.getAttribute("data-echarts-for"));
      if (!el) { return; }
      var chart = window.echarts.init(el, null, { renderer: "canvas" });
      chart.setOption(JSON.parse(s.textContent));
      charts.push(chart);
    });
    window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  }
  document.documentElement.setAttribute("data-charts", String(charts.length));
  document.documentElement.setAttribute("data-js", "ready");
})();
