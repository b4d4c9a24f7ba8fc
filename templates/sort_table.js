(function () {
  "use strict";
  // Sort any table.sortable by a clicked column heading. A cell's raw value (SI units) is in its
  // data-sort attribute where the text carries a unit; otherwise the text is the value. Rows of
  // class "group" head their tbody and stay on top: each tbody (a precision, say) sorts on its own.
  // Missing values (empty, or a cell spanning several columns) sort last either way.
  function cellAt(row, column) {
    var start = 0;
    for (var i = 0; i < row.cells.length; i++) {
      var cell = row.cells[i];
      if (column < start + cell.colSpan) { return cell.colSpan > 1 ? null : cell; }
      start += cell.colSpan;
    }
    return null;
  }
  function key(row, column) {
    var cell = cellAt(row, column);
    if (!cell) { return ""; }
    var raw = cell.getAttribute("data-sort");
    return (raw !== null ? raw : cell.textContent).trim();
  }
  function compare(a, b) {
    var x = Number(a), y = Number(b);
    var xn = a !== "" && !isNaN(x), yn = b !== "" && !isNaN(y);
    if (xn && yn) { return x - y; }
    if (xn !== yn) { return xn ? -1 : 1; }   // numbers before text
    return a.localeCompare(b);
  }
  function sortBody(body, column, ascending) {
    var rows = Array.prototype.slice.call(body.rows);
    var groups = rows.filter(function (r) { return r.classList.contains("group"); });
    var data = rows.filter(function (r) { return !r.classList.contains("group"); });
    data.sort(function (r, s) {
      var a = key(r, column), b = key(s, column);
      if (a === "" || b === "") { return a === b ? 0 : (a === "" ? 1 : -1); }
      return ascending ? compare(a, b) : compare(b, a);
    });
    groups.concat(data).forEach(function (row) { body.appendChild(row); });
  }
  function makeSortable(table) {
    var head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    if (!head) { return; }
    var column = 0;
    Array.prototype.forEach.call(head.cells, function (header) {
      var index = column;
      column += header.colSpan;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (header.firstChild) { button.appendChild(header.firstChild); }
      header.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(table.tBodies, function (body) { sortBody(body, index, ascending); });
        Array.prototype.forEach.call(head.cells, function (h) { h.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
})();
