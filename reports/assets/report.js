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

  // Porcupine's view measures its text with getBBox, which gives zeros in
  // a closed <details>: the frame is only created when the section opens.
  // The page inside tells its size back (see vizProbe in view.go), which
  // sizes the frame and marks the section as drawn.
  Array.prototype.forEach.call(document.querySelectorAll("details[data-viz]"), function (d) {
    var tpl = d.querySelector("template[data-viz-frame]");
    if (!tpl) { return; }
    function open() {
      if (!d.open || d.getAttribute("data-viz-state")) { return; }
      d.setAttribute("data-viz-state", "loading");
      d.appendChild(document.importNode(tpl.content, true));
      // A shared viewer (a course's porcupine.html) gets its history by
      // message once loaded.
      var f = d.querySelector("iframe[data-viz-data]");
      if (f) {
        var src = document.getElementById(f.getAttribute("data-viz-data"));
        f.addEventListener("load", function () {
          var v = JSON.parse(src.textContent);
          f.contentWindow.postMessage({ porcupineData: v.data, locklabClients: v.clients }, "*");
        });
      }
    }
    d.addEventListener("toggle", open);
    open();
  });
  window.addEventListener("message", function (e) {
    var m = e.data;
    if (!m || m.locklabViz !== true) { return; }
    Array.prototype.forEach.call(document.querySelectorAll("details[data-viz] iframe"), function (f) {
      if (f.contentWindow !== e.source) { return; }
      f.style.height = Math.max(160, Math.min(6000, Math.ceil(m.h) + 8)) + "px";
      var d = f.closest("details");
      if (m.boxes > 0) { d.setAttribute("data-viz-state", "drawn"); }
      d.setAttribute("data-viz-labels", String(m.labels || "").slice(0, 400));
      d.setAttribute("data-viz-ms", m.ms ? "1" : "0");
      d.setAttribute("data-viz-boxes", String(m.boxes));
      d.setAttribute("data-viz-fits", m.fits ? "1" : "0");
      d.setAttribute("data-viz-h", String(Math.ceil(m.h)));
    });
  });

  // A timeline wider than its box (a phone: the SVG keeps a readable
  // size and scrolls) opens on the violation rather than on second 0: the
  // first witness shape is scrolled into view, a little margin before it.
  function openOnViolation() {
    Array.prototype.forEach.call(document.querySelectorAll("figure.timeline"), function (fig) {
      if (fig.scrollWidth <= fig.clientWidth + 1) { return; }
      var w = fig.querySelector("svg.tl [id].witness");
      if (!w) { return; }
      var left = w.getBoundingClientRect().left - fig.getBoundingClientRect().left + fig.scrollLeft;
      // The lane names stay over the left of the box (svg.tl-names): the
      // violation opens just right of them.
      var names = fig.querySelector("svg.tl-names"), nw = names ? names.getBoundingClientRect().width : 0;
      fig.scrollLeft = Math.max(0, left - 40 - nw);
      fig.setAttribute("data-opened-on", w.id);
    });
  }
  openOnViolation();

  // Interactive charts, when a local ECharts copy is on the page. A chart
  // inside a closed <details> has no size yet: it is drawn when its
  // section opens, and resized with the window.
  var charts = [];
  function drawCharts() {
    if (!window.echarts) { return; }
    Array.prototype.forEach.call(document.querySelectorAll("script[data-echarts-for]"), function (s) {
      var el = document.getElementById(s.getAttribute("data-echarts-for"));
      if (!el || el.getAttribute("data-drawn") || el.clientWidth === 0) { return; }
      var chart = window.echarts.init(el, null, { renderer: "canvas" });
      chart.setOption(JSON.parse(s.textContent));
      el.setAttribute("data-drawn", "1");
      charts.push(chart);
    });
    document.documentElement.setAttribute("data-charts", String(charts.length));
  }
  drawCharts();
  document.addEventListener("toggle", drawCharts, true);
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  document.documentElement.setAttribute("data-charts", String(charts.length));
  document.documentElement.setAttribute("data-js", "ready");
})();
