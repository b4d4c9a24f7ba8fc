(function () {
  "use strict";
  // Each chart's Vega-Lite spec sits in a JSON data block beside the element it draws into. A chart inside the
  // collapsed appendix is drawn when the appendix opens (a closed <details> has no width to lay a chart out in).
  function draw(block) {
    var target = document.getElementById(block.getAttribute("data-chart"));
    if (!target || !window.vegaEmbed || target.getAttribute("data-drawn")) { return; }
    target.setAttribute("data-drawn", "1");
    var spec = JSON.parse(block.textContent);
    // No action menu: its links lead to online editors, and the page must stay offline.
    window.vegaEmbed(target, spec, { actions: false, renderer: "svg" }).catch(function (error) {
      target.textContent = "The chart could not be drawn: " + error;
    });
  }
  function drawIn(root) {
    var blocks = root.querySelectorAll('script[type="application/json"][data-chart]');
    Array.prototype.forEach.call(blocks, function (block) {
      var closed = block.closest("details:not([open])");
      if (!closed) { draw(block); }
    });
  }
  // A link into the appendix (#workload-resnet50, a glossary term) opens it first.
  function openFor(hash) {
    var target = hash && hash.length > 1 ? document.getElementById(decodeURIComponent(hash.slice(1))) : null;
    var details = target ? target.closest("details") : null;
    if (details && !details.open) { details.open = true; }
    if (target && details) { target.scrollIntoView(); }
  }
  Array.prototype.forEach.call(document.querySelectorAll("details"), function (details) {
    details.addEventListener("toggle", function () { if (details.open) { drawIn(details); } });
  });
  window.addEventListener("hashchange", function () { openFor(window.location.hash); });
  openFor(window.location.hash);
  drawIn(document);
})();
