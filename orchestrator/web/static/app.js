// vmbisect dashboard: refresh the live part of the page in place. The server renders it
// (escaped by Jinja2) as an HTML fragment; nothing from the store is ever built into markup here.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var stamp = document.getElementById("stamp");
  if (!live || !live.dataset.live) {
    return;
  }
  var every = parseInt(live.dataset.every, 10) || 2000;
  function say(text) {
    if (stamp) {
      stamp.textContent = text;
    }
  }
  // a frame marked data-reload (the report) is loaded again when the campaign's state or
  // update time, the live part's data-version, changes: a report made at the end replaces the
  // one of a running campaign
  function version() {
    var marked = live.querySelector("[data-version]");
    return marked ? marked.getAttribute("data-version") : "";
  }
  var seen = version();
  function reload() {
    var now = version();
    if (now !== seen) {
      seen = now;
      document.querySelectorAll("iframe[data-reload]").forEach(function (frame) {
        if (now.indexOf("running ") !== 0) {
          frame.classList.remove("pending");  // room for the report of a campaign that ended
        }
        frame.src = frame.getAttribute("src");
      });
    }
  }
  function tick() {
    fetch(live.dataset.live, {cache: "no-store", headers: {"Accept": "text/html"}})
      .then(function (r) {
        return r.text().then(function (text) {
          live.innerHTML = text;
          reload();
          say(r.ok ? "updated " + new Date().toLocaleTimeString() : "the store does not answer");
        });
      })
      .catch(function () {
        say("the dashboard does not answer; trying again");
      })
      .then(function () {
        setTimeout(tick, every);
      });
  }
  say("live, every " + every / 1000 + " s");
  setTimeout(tick, every);
})();
