// natscoord dashboard: one EventSource; rows update in place, fragments
// reload when an event they care about arrives, countdowns tick locally.
// Every text taken from an event is set with textContent, never as HTML.
(function () {
  "use strict";
  var prefix = document.body.dataset.prefix || "";
  var live = document.getElementById("live");
  var pending = new Map();

  function reload(el) {
    if (pending.has(el)) return;
    pending.set(el, setTimeout(function () {
      pending.delete(el);
      fetch(el.dataset.fragment, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error(r.status);
        return r.text();
      }).then(function (html) {
        el.innerHTML = html; // server-rendered and escaped by html/template
        tick();
      }).catch(function () {});
    }, 150));
  }

  function reloadFor(type, ref) {
    document.querySelectorAll("[data-fragment]").forEach(function (el) {
      var on = (el.dataset.on || "").split(" ");
      if (on.indexOf(type) < 0) return;
      if (el.dataset.ref && ref && el.dataset.ref !== ref) return;
      reload(el);
    });
  }

  function setField(row, name, value) {
    var c = row.querySelector('[data-field="' + name + '"]');
    if (!c) return;
    c.textContent = value == null ? "" : String(value);
    if (name === "status") c.className = "badge status-" + value;
    if (name === "error") c.title = c.textContent;
  }

  function onLedger(e) {
    var ev = JSON.parse(e.data);
    document.querySelectorAll('[data-ref="' + CSS.escape(ev.ref) + '"]').forEach(function (row) {
      if (row.hasAttribute("data-fragment")) return;
      // The badge names the phase (scheduled, retrying, cancelled, ...),
      // which the dashboard judges from the record; status is stored.
      if (ev.status) setField(row, "status", ev.phase || ev.status);
      setField(row, "owner", ev.owner);
      setField(row, "fence", ev.fence);
      setField(row, "blocked_by", ev.blocked_by);
      setField(row, "error", ev.error);
      row.classList.add("flash-row");
      setTimeout(function () { row.classList.remove("flash-row"); }, 600);
    });
    reloadFor("ledger", ev.ref);
  }

  // onEvent adds a row to the live events page. Rows elsewhere follow
  // "ledger" pushes, which come from the records, not from events.
  function onEvent(e) {
    var ev = JSON.parse(e.data);
    // A completion moves the overview's finished chart.
    if (ev.name === "ledger.completed") reloadFor("chart");
    var rows = document.getElementById("event-rows");
    if (rows && document.getElementById("live-events")) {
      var tr = document.createElement("tr");
      var a = document.createElement("a");
      a.href = prefix + "/task?key=" + ev.ref;
      var code = document.createElement("code");
      code.textContent = ev.key;
      a.appendChild(code);
      var badge = document.createElement("span");
      badge.className = "badge status-" + ev.status;
      badge.textContent = ev.status;
      var cells = [new Date(ev.time).toLocaleTimeString(), ev.name, a, badge, ev.owner || "", String(ev.fence), String(ev.revision)];
      cells.forEach(function (v) {
        var td = document.createElement("td");
        if (typeof v === "string") td.textContent = v; else td.appendChild(v);
        tr.appendChild(td);
      });
      rows.insertBefore(tr, rows.firstChild);
      while (rows.children.length > 500) rows.removeChild(rows.lastChild);
    }
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = (Number(el.dataset.expires) - now) / 1000;
      el.textContent = left > 0 ? left.toFixed(1) + " s" : "due (server expires it)";
      el.classList.toggle("soon", left < 3);
    });
  }
  setInterval(tick, 250);
  tick();

  // setNATS shows whether updates can arrive: the page is connected to
  // the dashboard, but the dashboard may have lost NATS.
  function setNATS(up) {
    live.textContent = up ? "live" : "NATS unreachable";
    live.className = up ? "live on" : "live off";
  }

  function connect() {
    var es = new EventSource(prefix + "/sse");
    es.addEventListener("hello", function (e) {
      setNATS(JSON.parse(e.data).up !== false);
      document.querySelectorAll("[data-fragment]").forEach(reload);
    });
    es.addEventListener("nats", function (e) {
      var up = JSON.parse(e.data).up;
      setNATS(up);
      if (up) document.querySelectorAll("[data-fragment]").forEach(reload);
    });
    es.addEventListener("ledger", onLedger);
    es.addEventListener("event", onEvent);
    es.addEventListener("coord", function (e) { reloadFor("coord", JSON.parse(e.data).ref); });
    es.addEventListener("schedule", function () { reloadFor("schedule"); });
    es.addEventListener("pause", function () { reloadFor("pause"); });
    // A minute passed: the charts move along.
    es.addEventListener("chart", function () { reloadFor("chart"); });
    es.addEventListener("action", function (e) {
      var a = JSON.parse(e.data);
      reloadFor("action", a.task ? a.ref : null);
    });
    es.onerror = function () {
      live.textContent = "reconnecting…";
      live.className = "live off";
    };
  }
  if (live) connect();
})();
