// compare.html?a=<run>&b=<run>: both runs' headline figures per system from runs.json
// (written by analysis/site.py), with the change from a to b.
(function () {
  var params = new URLSearchParams(location.search);
  var out = document.getElementById("comparison");

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  function fmt(v, unit) {
    if (v === null || v === undefined) return "-";
    if (unit === "%") return (100 * v).toFixed(1) + "%";
    if (unit === "ops/s") return v.toLocaleString("en", {minimumFractionDigits: 1, maximumFractionDigits: 1});
    return Math.abs(v) < 10 ? v.toFixed(2) : v.toFixed(1);
  }

  function change(m, a, b, sameWithin) {
    if (a === null || a === undefined || b === null || b === undefined) return el("td", {}, ["-"]);
    var d = b - a;
    var scale = m.unit === "%" ? 100 : 1;
    // a share's change in percentage points, then relative to A
    var text = (d >= 0 ? "+" : "") + (m.unit === "%" ? (100 * d).toFixed(1) + " pts" : fmt(d, m.unit));
    if (a) text += " (" + (d >= 0 ? "+" : "") + (100 * d / a).toFixed(0) + "%)";
    var word = "same";
    if (Math.abs(d) > Math.max(sameWithin * Math.abs(a), 0.05 / scale)) {
      word = (d > 0) === m.higher_is_better ? "better" : "worse";
    }
    return el("td", {"class": "num " + word}, [text + " " + word]);
  }

  function runLink(r) {
    return el("a", {href: "run-" + r.slug + ".html"}, [r.id]);
  }

  function render(data) {
    var byId = {};
    data.runs.forEach(function (r) { byId[r.id] = r; });
    ["a", "b"].forEach(function (side, i) {
      var select = document.getElementById("compare-" + side);
      data.runs.forEach(function (r) { select.appendChild(el("option", {value: r.id}, [r.id])); });
      var chosen = params.get(side) || (data.runs[1 - i] || data.runs[0] || {}).id;
      if (chosen) select.value = chosen;
    });
    var a = byId[params.get("a")], b = byId[params.get("b")];
    if (!params.get("a") && !params.get("b")) return;
    out.textContent = "";
    var missing = ["a", "b"].filter(function (s) { return !byId[params.get(s)]; });
    if (missing.length) {
      out.appendChild(el("p", {"class": "note bad"}, ["No run " + missing.map(function (s) {
        return JSON.stringify(params.get(s) || "");
      }).join(" or ") + " in this runs directory."]));
      return;
    }
    var facts = el("table", {"class": "grid", id: "compare-runs"}, [
      el("tr", {}, ["", "run", "experiment", "date", "commit", "status", "flags"].map(function (h) { return el("th", {}, [h]); }))]);
    [["A", a], ["B", b]].forEach(function (pair) {
      var r = pair[1];
      var flags = [];
      if (r.degraded) flags.push("degraded emulation");
      if (r.violations_total) flags.push(r.violations_total + " violations");
      facts.appendChild(el("tr", {}, [el("th", {}, [pair[0]]), el("td", {}, [runLink(r)]),
        el("td", {}, [r.experiment]), el("td", {}, [r.date]), el("td", {}, [r.commit + (r.dirty ? " +dirty" : "")]),
        el("td", {}, [r.status_text + " " + r.trials_present + "/" + r.trials_expected + " trials"]),
        el("td", {}, [flags.join(", ") || "-"])]));
    });
    out.appendChild(facts);
    if (a.experiment !== b.experiment) {
      out.appendChild(el("p", {"class": "note"}, ["The runs are of different experiments (" + a.experiment +
        ", " + b.experiment + "): their figures differ by construction."]));
    }
    var systems = a.systems.concat(b.systems.filter(function (s) { return a.systems.indexOf(s) < 0; }));
    var table = el("table", {"class": "grid", id: "compare-table"}, [el("tr", {}, ["system", "figure", "A", "B", "change"].map(
      function (h) { return el("th", {}, [h]); }))]);
    systems.forEach(function (s) {
      var ha = a.headline[s] || {}, hb = b.headline[s] || {};
      data.metrics.forEach(function (m, i) {
        var label = (a.labels[s] || b.labels[s] || s);
        var what = m.what + (m.unit === "%" ? "" : " (" + m.unit + ")");
        if (m.unit === "ms") what = (ha.op || hb.op || "").toUpperCase() + " " + what;
        table.appendChild(el("tr", {"class": i === 0 ? "first" : ""}, [
          el("td", {}, [i === 0 ? label : ""]), el("td", {}, [what]),
          el("td", {"class": "num a"}, [fmt(ha[m.key], m.unit)]), el("td", {"class": "num b"}, [fmt(hb[m.key], m.unit)]),
          change(m, ha[m.key], hb[m.key], data.same_within)]));
      });
      if ((ha.point || "") !== (hb.point || "")) {
        table.appendChild(el("tr", {}, [el("td", {}, []), el("td", {colspan: "4", "class": "muted"},
          ["points differ: A at " + (ha.point || "-") + ", B at " + (hb.point || "-")])]));
      }
    });
    out.appendChild(table);
  }

  fetch("runs.json").then(function (r) {
    if (!r.ok) throw new Error("runs.json: HTTP " + r.status);
    return r.json();
  }).then(render).catch(function (e) {
    out.textContent = "";
    out.appendChild(el("p", {"class": "note bad"}, [String(e)]));
  });
})();
