// The browser test's probe (reports/browser_test.go evaluates it in each
// page over the DevTools protocol; no report ships it). It opens every
// collapsible view, waits until porcupine's view says it is drawn (or
// three seconds have passed), then returns what it found: horizontal
// scrolling of the page, elements whose text runs out of their box,
// timeline labels that overlap, and the state of porcupine's views.
(function () {
  "use strict";
  function clipped(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") { return true; }
    }
    return false;
  }
  function describe(el) {
    var s = el.tagName.toLowerCase();
    if (el.id) { s += "#" + el.id; }
    if (typeof el.className === "string" && el.className.trim()) { s += "." + el.className.trim().split(/\s+/).join("."); }
    return s + " \u201c" + (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 70) + "\u201d";
  }
  function measure() {
    var vw = document.documentElement.clientWidth;
    var out = {
      width: vw,
      scrollWidth: document.documentElement.scrollWidth,
      height: document.documentElement.scrollHeight,
      overflow: [],
      viz: [],
      details: document.querySelectorAll("details").length,
      js: document.documentElement.getAttribute("data-js") || "",
      charts: Number(document.documentElement.getAttribute("data-charts") || 0),
      canvases: document.querySelectorAll(".chart canvas").length,
      error: (document.getElementById("locklab-js-error") || {}).textContent || ""
    };
    var all = document.body.querySelectorAll("*");
    for (var i = 0; i < all.length && out.overflow.length < 15; i++) {
      var el = all[i];
      if (el.closest("svg") || el.closest("template") || /^(SCRIPT|STYLE|BR|WBR)$/.test(el.tagName)) { continue; }
      var cs = getComputedStyle(el);
      if (cs.display === "none" || cs.visibility === "hidden") { continue; }
      var r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) { continue; }
      if (clipped(el)) { continue; }
      if (r.right > vw + 1) {
        out.overflow.push("beyond the window: " + describe(el) + " (right edge " + Math.round(r.right) + " > " + vw + ")");
        continue;
      }
      if (cs.display !== "inline" && cs.overflowX === "visible" && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
        out.overflow.push("text overflows its box: " + describe(el) + " (" + el.scrollWidth + " > " + el.clientWidth + ")");
      }
    }
    // Labels of a timeline that overlap each other.
    out.collisions = [];
    Array.prototype.forEach.call(document.querySelectorAll("svg.tl"), function (svg) {
      var boxes = Array.prototype.map.call(svg.querySelectorAll("text"), function (t) {
        var b = t.getBBox();
        return { t: t.textContent, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height };
      }).filter(function (b) { return b.x1 > b.x0; });
      for (var i = 0; i < boxes.length && out.collisions.length < 30; i++) {
        for (var j = i + 1; j < boxes.length; j++) {
          var a = boxes[i], b = boxes[j];
          var w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0), h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
          if (w > 2 && h > 3) { out.collisions.push("“" + a.t + "” over “" + b.t + "”"); }
        }
      }
    });
    // Labels that a bar crosses: a label sits inside a bar or beside it,
    // never half over one (its edge or outline would stripe the text).
    // Bars are the drawn intervals: holds, key spans, validity, votes,
    // roles, sessions, znodes, fault windows.
    out.barOverlaps = [];
    var barSel = "rect.hold, rect.key-span, rect.key-nominal, rect.validity, rect.vote, rect.role, rect.session, rect.znode, rect.fault, rect.want";
    Array.prototype.forEach.call(document.querySelectorAll("svg.tl"), function (svg) {
      // Bars are clipped to the plot (a zoomed view cuts the bars that
      // began before it); getBBox does not know, so clip here too.
      var clip = svg.querySelector("clipPath rect"), cx0 = -1e9, cx1 = 1e9;
      if (clip) { var cb = clip.getBBox(); cx0 = cb.x; cx1 = cb.x + cb.width; }
      var bars = Array.prototype.map.call(svg.querySelectorAll(barSel), function (r) {
        var b = r.getBBox();
        return { c: r.getAttribute("class"), t: (r.querySelector("title") || {}).textContent || "", x0: Math.max(b.x, cx0), y0: b.y, x1: Math.min(b.x + b.width, cx1), y1: b.y + b.height };
      }).filter(function (b) { return b.x1 > b.x0; });
      Array.prototype.forEach.call(svg.querySelectorAll("text"), function (t) {
        var a = t.getBBox();
        if (a.width === 0) { return; }
        var x0 = a.x + 1, y0 = a.y + 2, x1 = a.x + a.width - 1, y1 = a.y + a.height - 2;
        for (var i = 0; i < bars.length && out.barOverlaps.length < 30; i++) {
          var b = bars[i];
          var w = Math.min(x1, b.x1) - Math.max(x0, b.x0), h = Math.min(y1, b.y1) - Math.max(y0, b.y0);
          if (w <= 0 || h <= 0) { continue; }
          var inside = x0 >= b.x0 - 0.5 && x1 <= b.x1 + 0.5 && y0 >= b.y0 - 0.5 && y1 <= b.y1 + 0.5;
          if (!inside) { out.barOverlaps.push("\u201c" + t.textContent + "\u201d over a " + b.c + " bar (" + b.t.slice(0, 60) + ")"); }
        }
      });
    });
    // Timelines that carry a violation: on a narrow screen they scroll,
    // say so, and open on the violation (report.js).
    out.timelines = [];
    Array.prototype.forEach.call(document.querySelectorAll("figure.timeline"), function (fig) {
      var w = fig.querySelector("svg.tl [id].witness");
      if (!w) { return; }
      var fr = fig.getBoundingClientRect(), wr = w.getBoundingClientRect();
      var hint = fig.querySelector(".scroll-hint");
      // On a phone the lane names and the legend stay in view while the
      // plot scrolls (svg.tl-names, a sticky figcaption), and the labels
      // are drawn at 11 px or more.
      var names = fig.querySelector("svg.tl-names"), nr = names ? names.getBoundingClientRect() : null;
      var namesShown = !!nr && getComputedStyle(names).display !== "none" && nr.width > 0;
      var cap = fig.querySelector("figcaption .legend"), cr = cap ? cap.getBoundingClientRect() : null;
      var svg = fig.querySelector("svg.tl"), scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width, smallest = 99;
      Array.prototype.forEach.call(svg.querySelectorAll("text"), function (t) {
        smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * scale);
      });
      out.timelines.push({
        id: fig.id,
        scrollable: fig.scrollWidth > fig.clientWidth + 1,
        openedOn: fig.getAttribute("data-opened-on") || "",
        witnessInView: wr.right > (namesShown ? nr.right : fr.left) && wr.left < fr.right,
        namesInView: namesShown && nr.left >= fr.left - 0.5 && nr.left <= fr.left + 12,
        legendInView: !!cr && cr.left >= fr.left - 0.5 && cr.right <= fr.right + 0.5,
        smallestText: smallest,
        hint: !!hint && getComputedStyle(hint).display !== "none"
      });
    });
    var full = document.querySelector(".tl-section .tl-full"), zoom = document.querySelector(".tl-section .tl-zoom");
    out.zoomFirst = !!(full && zoom) && zoom.getBoundingClientRect().top < full.getBoundingClientRect().top;
    out.zoom = !!zoom;
    Array.prototype.forEach.call(document.querySelectorAll("details[data-viz]"), function (d) {
      var f = d.querySelector("iframe");
      out.viz.push({ state: d.getAttribute("data-viz-state") || "", boxes: Number(d.getAttribute("data-viz-boxes") || 0), height: f ? f.getBoundingClientRect().height : 0, labels: d.getAttribute("data-viz-labels") || "", ms: d.getAttribute("data-viz-ms") === "1", fits: d.getAttribute("data-viz-fits") === "1", contentHeight: Number(d.getAttribute("data-viz-h") || 0) });
    });
    return JSON.stringify(out);
  }
  return new Promise(function (resolve) {
    Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
    var waited = 0;
    (function wait() {
      var pending = Array.prototype.filter.call(document.querySelectorAll("details[data-viz]"), function (d) {
        var st = d.getAttribute("data-viz-state");
        return d.querySelector("template[data-viz-frame]") && st !== "drawn" && st !== "empty";
      }).length;
      if (pending === 0 || waited >= 3000) { resolve(measure()); return; }
      waited += 100;
      setTimeout(wait, 100);
    })();
  });
})()
