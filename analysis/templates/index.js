// The index's filter: keeps the runs whose row mentions every word typed, and a
// reproduction's heading while any of its runs shows.
(function () {
  var box = document.getElementById("filter");
  if (!box) return;
  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = {};
    document.querySelectorAll("#runs tr.run").forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      row.hidden = !ok;
      if (ok && row.dataset.group) shown[row.dataset.group] = true;
    });
    document.querySelectorAll("#runs tr.group").forEach(function (row) {
      row.hidden = !shown[row.dataset.group];
    });
  });
})();
