(function () {
  "use strict";
  // The job chooser: the rankings were computed at build time; this only picks one and scales it.
  var data = JSON.parse(document.getElementById("job-data").textContent);
  var el = function (id) { return document.getElementById(id); };
  var workload = el("job-workload"), precision = el("job-precision"), amount = el("job-amount");
  var unit = el("job-unit"), dataset = el("job-dataset"), sort = el("job-sort");

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = value; o.textContent = label; select.appendChild(o);
  }
  function current() { return data.workloads[Number(workload.value)]; }
  function fmt(x, digits) {
    if (x === null || x === undefined) { return "—"; }
    return x.toLocaleString("en-US", { maximumSignificantDigits: digits || 3 });
  }
  function hours(h) { return h < 1 ? fmt(h * 60) + " min" : fmt(h) + " h"; }
  function dollars(c) { return "$" + (c < 10 ? c.toFixed(2) : fmt(c, 4)); }

  data.workloads.forEach(function (w, i) {
    option(workload, i, w.workload + (w.traced ? " (predicted from a trace: " + w.machine + ", no GPU measured)"
                                               : " (measured on " + w.machine + ")"));
  });
  Object.keys(data.datasets).forEach(function (name) { option(dataset, name, name); });

  function fillWorkload() {
    var w = current();
    precision.textContent = "";
    w.precisions.forEach(function (p) { option(precision, p, p); });
    precision.value = w.precisions.indexOf("bf16") >= 0 ? "bf16" : w.precisions[0];
    unit.textContent = "";
    option(unit, "samples", w.unit || "samples");
    option(unit, "epochs", "epochs of a dataset");
    if (w.tokens_per_sample) { option(unit, "tokens", "tokens"); }
    unit.value = w.default.kind;
    amount.value = w.default.value;
    if (w.default.dataset) { dataset.value = w.default.dataset; }
  }

  function samplesAsked() {
    var w = current(), value = Number(amount.value);
    if (!(value > 0)) { return null; }
    if (unit.value === "tokens") { return value / w.tokens_per_sample; }
    if (unit.value === "epochs") { return value * data.datasets[dataset.value]; }
    return value;
  }

  function render() {
    var w = current(), samples = samplesAsked();
    el("job-dataset-label").hidden = unit.value !== "epochs";
    var body = document.querySelector("#job-ranking tbody");
    body.textContent = "";
    if (samples === null) { el("job-summary").textContent = "Give an amount of work above zero."; return; }
    var best = null, bestGap = Infinity;
    for (var i = 0; i < w.amounts; i++) {
      var t = data.tables[[w.machine, w.workload, precision.value, i].join("|")];
      var gap = t ? Math.abs(Math.log(samples / t.samples)) : Infinity;
      if (gap < bestGap) { best = t; bestGap = gap; }
    }
    if (!best) { el("job-summary").textContent = "No ranking for this precision."; return; }
    var k = samples / best.samples;
    var ok = best.rows.filter(function (r) { return r[1] === 1; });
    var key = sort.value === "cost" ? 4 : 3, other = key === 3 ? 4 : 3;
    ok.sort(function (a, b) { return (a[key] - b[key]) || (a[other] - b[other]); });
    ok.forEach(function (r, n) {
      var meta = data.instances[r[0]], tr = document.createElement("tr");
      var band = r[6] !== null ? " (" + hours(r[6] * k) + "–" + hours(r[7] * k) + ")" : "";
      var cells = [String(n + 1), meta[0] + " · " + meta[1] + (r[8] ? " · † unchecked" : "") +
                   (r[10] ? " · ‡ runs " + r[10] : ""), meta[2], r[11],
                   fmt(r[12]) + (r[13] ? " (feed " + r[13] + ")" : ""),
                   fmt(r[2]), hours(r[3] * k) + band, dollars(r[4] * k), "$" + meta[3].toFixed(2),
                   r[5] ? "yes" : ""];
      cells.forEach(function (text, c) {
        var td = document.createElement("td");
        td.textContent = text;
        if (c === 0 || (c >= 4 && c <= 8)) { td.className = "num"; }
        tr.appendChild(td);
      });
      tr.setAttribute("data-instance", meta[0]);
      body.appendChild(tr);
    });
    var standIn = ok.filter(function (r) { return r[10]; });
    el("job-stand-in").textContent = standIn.length ? data.stand_in_words[precision.value] + "." : "";
    var cannot = best.rows.length - ok.length;
    el("job-cannot").textContent = cannot ? cannot + " more catalog instances cannot run this job (their GPU " +
      "lacks the precision, or memory, or has no prediction)." : "";
    el("job-summary").textContent = w.workload + " at " + precision.value + ", " + fmt(samples, 4) + " " +
      (w.unit || "samples") + ", predicted from " + (w.traced ? "a trace, no GPU measured (" + w.machine + ", " +
      w.gpu + " as learned)" : w.machine + " (" + w.gpu + ")") + ": " + ok.length +
      " instances, by " + (sort.value === "cost" ? "cost" : "time") + "; scaled ×" + fmt(k, 3) +
      " from the table computed for " + fmt(best.samples, 4) + ".";
  }

  workload.addEventListener("change", function () { fillWorkload(); render(); });
  [precision, unit, dataset, sort].forEach(function (s) { s.addEventListener("change", render); });
  amount.addEventListener("input", render);
  fillWorkload();
  render();
})();
