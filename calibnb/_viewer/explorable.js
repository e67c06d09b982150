/* Explorable figures (calibnb.explorable): a slider switches between frames that calibnb computed
   when the book was built. This script only draws: it reads each `.explorable` element's JSON
   (`script.explorable-data`), draws the current frame as SVG at the element's width, and redraws
   when the slider moves or the element is resized. No number is computed here.

   calibnb.explorable writes this file into each figure's HTML (after its data), so a figure works
   wherever its cell output is shown: the built book, offline (nothing is fetched), or a notebook.
   The first copy on a page defines window.calibnbExplorable; every copy then sets up its own
   figure (found from document.currentScript, even before the output is attached to the page) and
   any other `.explorable` element, once each. */
(function () {
  "use strict";
  var current = document.currentScript;
  var api = window.calibnbExplorable || (window.calibnbExplorable = viewer());
  var own = current && current.closest ? current.closest(".explorable") : null;
  if (own) api.setup(own);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", api.setupAll);
  else api.setupAll();

  function viewer() {
    var SVG = "http://www.w3.org/2000/svg";
    var MARGIN = {left: 52, right: 12, top: 10, bottom: 42};

    function el(name, attrs, parent) {
      var node = document.createElementNS(SVG, name);
      Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      if (parent) parent.appendChild(node);
      return node;
    }

    function scale(axis, from, to) {
      var log = axis.scale === "log";
      var f = function (v) { return log ? Math.log10(v) : v; };
      var lo = f(axis.min), hi = f(axis.max);
      return function (v) { return from + (f(v) - lo) / (hi - lo) * (to - from); };
    }

    function tickText(v, axis) {
      if (axis.scale === "log") {
        var k = Math.round(Math.log10(v));
        return k >= -2 && k <= 2 ? String(v) : "1e" + k;
      }
      return String(Math.round(v * 1000) / 1000);
    }

    function within(v, axis) {
      return v !== null && (axis.scale !== "log" || v > 0);
    }

    function drawLayer(g, layer, spec, sx, sy) {
      var xs = typeof layer.x === "string" ? spec.grids[layer.x] : layer.x;
      var cls = "explorable-" + layer.kind + " explorable-" + layer.style;
      if (layer.kind === "line") {
        var d = "", pen = "M";
        for (var i = 0; i < xs.length; i++) {
          if (!within(layer.y[i], spec.axes.y)) { pen = "M"; continue; }
          d += pen + sx(xs[i]).toFixed(1) + "," + sy(layer.y[i]).toFixed(1);
          pen = "L";
        }
        el("path", {d: d, "class": cls}, g);
      } else if (layer.kind === "points") {
        for (var j = 0; j < xs.length; j++) {
          if (within(layer.y[j], spec.axes.y)) {
            el("circle", {cx: sx(xs[j]), cy: sy(layer.y[j]), r: layer.style === "chosen" ? 5 : 3.5, "class": cls}, g);
          }
        }
      } else if (layer.kind === "bars") {
        for (var b = 0; b < layer.x0.length; b++) {
          var y0 = sy(layer.y0[b]), y1 = sy(layer.y1[b]);
          el("rect", {x: sx(layer.x0[b]), width: Math.max(sx(layer.x1[b]) - sx(layer.x0[b]), 1),
                      y: Math.min(y0, y1), height: Math.abs(y1 - y0), "class": cls}, g);
        }
      }
    }

    function drawAxis(g, axis, horizontal, sx, sy, width, height) {
      var m = MARGIN;
      axis.ticks.forEach(function (t) {
        if (horizontal) {
          var x = sx(t);
          el("line", {x1: x, x2: x, y1: height - m.bottom, y2: height - m.bottom + 5, "class": "explorable-tick"}, g);
          el("text", {x: x, y: height - m.bottom + 17, "text-anchor": "middle", "class": "explorable-label"}, g)
            .textContent = tickText(t, axis);
        } else {
          var y = sy(t);
          el("line", {x1: m.left - 5, x2: m.left, y1: y, y2: y, "class": "explorable-tick"}, g);
          el("line", {x1: m.left, x2: width - m.right, y1: y, y2: y, "class": "explorable-grid"}, g);
          el("text", {x: m.left - 8, y: y + 4, "text-anchor": "end", "class": "explorable-label"}, g)
            .textContent = tickText(t, axis);
        }
      });
      var title = el("text", {"class": "explorable-label explorable-axis-title", "text-anchor": "middle"}, g);
      title.textContent = axis.label;
      if (horizontal) {
        title.setAttribute("x", (m.left + width - m.right) / 2);
        title.setAttribute("y", height - 6);
      } else {
        var cy = (m.top + height - m.bottom) / 2;
        title.setAttribute("transform", "translate(13," + cy + ") rotate(-90)");
      }
    }

    function render(root, spec, index) {
      var plot = root.querySelector(".explorable-plot");
      var width = Math.max(Math.min(plot.clientWidth || 640, 720), 260);
      var height = Math.round(Math.max(Math.min(width * 0.62, 420), 240));
      var m = MARGIN;
      var sx = scale(spec.axes.x, m.left, width - m.right);
      var sy = scale(spec.axes.y, height - m.bottom, m.top);
      var frame = spec.frames[index];
      var svg = el("svg", {viewBox: "0 0 " + width + " " + height, width: width, height: height,
                           role: "img", "aria-label": frame.readout});
      var axes = el("g", {}, svg);
      drawAxis(axes, spec.axes.x, true, sx, sy, width, height);
      drawAxis(axes, spec.axes.y, false, sx, sy, width, height);
      var clipId = (root.querySelector("input").id || "explorable") + "-clip";
      var clip = el("clipPath", {id: clipId}, el("defs", {}, svg));
      el("rect", {x: m.left, y: m.top, width: width - m.left - m.right, height: height - m.top - m.bottom}, clip);
      var data = el("g", {"clip-path": "url(#" + clipId + ")"}, svg);
      spec.static.forEach(function (layer) { drawLayer(data, layer, spec, sx, sy); });
      frame.layers.forEach(function (layer) { drawLayer(data, layer, spec, sx, sy); });
      el("rect", {x: m.left, y: m.top, width: width - m.left - m.right, height: height - m.top - m.bottom,
                  "class": "explorable-frame"}, svg);
      plot.replaceChildren(svg);
    }

    function legend(root, spec) {
      if (!spec.legend.length || root.querySelector(".explorable-legend")) return;
      var list = document.createElement("ul");
      list.className = "explorable-legend";
      spec.legend.forEach(function (entry) {
        var item = document.createElement("li");
        var key = el("svg", {width: 22, height: 12, "aria-hidden": "true"});
        if (["bar", "gap"].indexOf(entry.style) >= 0) {
          el("rect", {x: 2, y: 1, width: 18, height: 10, "class": "explorable-bars explorable-" + entry.style}, key);
        } else if (["chosen", "marker"].indexOf(entry.style) >= 0) {
          el("circle", {cx: 11, cy: 6, r: 4.5, "class": "explorable-points explorable-" + entry.style}, key);
        } else {
          el("path", {d: "M1,6L21,6", "class": "explorable-line explorable-" + entry.style}, key);
        }
        item.appendChild(key);
        item.appendChild(document.createTextNode(entry.label));
        list.appendChild(item);
      });
      root.insertBefore(list, root.querySelector(".explorable-controls"));
    }

    function setup(root) {
      if (root.dataset.explorableReady) return;
      var source = root.querySelector("script.explorable-data");
      var input = root.querySelector("input[type=range]");
      var output = root.querySelector("output");
      if (!source || !input || !output) return;
      var spec = JSON.parse(source.textContent);
      root.dataset.explorableReady = "1";
      var show = function () {
        var index = Math.min(Math.max(parseInt(input.value, 10) || 0, 0), spec.frames.length - 1);
        output.textContent = spec.frames[index].readout;
        input.setAttribute("aria-valuetext", spec.parameter + " = " + spec.values[index]);
        render(root, spec, index);
      };
      legend(root, spec);
      input.addEventListener("input", show);
      var lastWidth = 0;
      var resized = function () {
        var w = root.querySelector(".explorable-plot").clientWidth;
        if (w !== lastWidth) { lastWidth = w; show(); }
      };
      if (window.ResizeObserver) new ResizeObserver(resized).observe(root);
      else window.addEventListener("resize", resized);
      show();
    }

    function setupAll() {
      document.querySelectorAll(".explorable").forEach(setup);
    }

    return {setup: setup, setupAll: setupAll};
  }
})();
