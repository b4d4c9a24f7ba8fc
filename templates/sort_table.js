(function () {
  "use strict";
  // Sort the machines table by a clicked column; cells carry their raw value in data-sort.
  var table = document.getElementById("machines");
  if (!table) { return; }
  var headers = table.tHead.rows[0].cells;
  function key(row, column) { return row.cells[column].getAttribute("data-sort") || ""; }
  function compare(a, b) {
    if (a === b) { return 0; }
    if (a === "") { return 1; }   // missing values sort last either way
    if (b === "") { return -1; }
    var x = parseFloat(a), y = parseFloat(b);
    return isNaN(x) || isNaN(y) ? a.localeCompare(b) : x - y;
  }
  Array.prototype.forEach.call(headers, function (header, column) {
    header.querySelector("button").addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (r, s) {
        var a = key(r, column), b = key(s, column);
        if (a === "" || b === "") { return compare(a, b); }
        return ascending ? compare(a, b) : compare(b, a);
      });
      rows.forEach(function (row) { body.appendChild(row); });
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    });
  });
})();
