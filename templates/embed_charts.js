(function () {
  "use strict";
  // Each chart's Vega-Lite spec sits in a JSON data block beside the element it draws into.
  var blocks = document.querySelectorAll('script[type="application/json"][data-chart]');
  Array.prototype.forEach.call(blocks, function (block) {
    var target = document.getElementById(block.getAttribute("data-chart"));
    if (!target || !window.vegaEmbed) { return; }
    var spec = JSON.parse(block.textContent);
    // No action menu: its links lead to online editors, and the page must stay offline.
    window.vegaEmbed(target, spec, { actions: false, renderer: "svg" }).catch(function (error) {
      target.textContent = "The chart could not be drawn: " + error;
    });
  });
})();
