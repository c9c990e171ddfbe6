// The inbox's one script: the list of runs that wait updates itself. The server sends an event
// when the runs that wait change (the element's data-live URL, server-sent events); the list is
// then fetched again as HTML that the server rendered (and escaped) and put in place. Every page
// works without it; a reload shows the same.
"use strict";
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) {
    return;
  }
  var source = new EventSource(live.getAttribute("data-live"));
  source.addEventListener("waiting", function (event) {
    fetch(live.getAttribute("data-fragment"), { credentials: "same-origin" }).then(function (response) {
      if (response.status === 401) {
        source.close();
        live.insertAdjacentHTML("afterbegin", '<p class="alert" role="alert">Your session ended: reload the page to log in again.</p>');
        return;
      }
      if (response.ok) {
        return response.text().then(function (html) {
          live.innerHTML = html;
          live.setAttribute("data-version", event.data);
        });
      }
    });
  });
})();
