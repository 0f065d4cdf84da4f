// The header (templates/portal/base.html): the Menu button that folds the navigation on a narrow screen,
// and the indicator of the user's tasks (templates/portal/tasks/_indicator.html), a button that opens and
// closes their list (#tasks-panel), loaded when opened.
//
// The indicator is polled by htmx; here its polls are held back while the tab is hidden (and it is read
// again as soon as the tab shows), an answer that changed nothing is not swapped in (a screen reader is not
// told the same counts again), and a poll that meets a session due for renewal does not take the page
// away to the identity provider: the indicator stops there, and the user's next click renews the session.
(function () {
  "use strict";

  const NAV = 'header nav[aria-label="Main"]';
  const TASKS_BUTTON = "tasks-button";
  const REFRESH = "flexplane:tasks-refresh";
  const OPEN = "flexplane:tasks-open";
  let lastIndicator = null;

  // ---------------------------------------------------------------- the Menu button (narrow screens)

  function setMenu(nav, button, open) {
    nav.dataset.menu = open ? "open" : "closed";
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function initMenu() {
    const nav = document.querySelector(NAV);
    const button = document.getElementById("menu-button");
    if (!nav || !button) return;
    setMenu(nav, button, false); // without this script, the navigation stays unfolded
    button.hidden = false;
    button.addEventListener("click", () => setMenu(nav, button, nav.dataset.menu !== "open"));
  }

  // ---------------------------------------------------------------- the tasks' indicator and list

  function tasksButton() {
    return document.getElementById(TASKS_BUTTON);
  }

  function panel() {
    return document.getElementById("tasks-panel");
  }

  function setTasksOpen(open) {
    const shown = panel();
    const button = tasksButton();
    if (!shown || !button) return;
    const wasOpen = !shown.hidden;
    shown.hidden = !open;
    button.setAttribute("aria-expanded", open ? "true" : "false");
    if (open && !wasOpen && window.htmx) {
      lastIndicator = null; // the list's answer brings a new one
      // Opening is looking: the list's answer carries the indicator with the failures no longer counted.
      window.htmx.trigger(document.getElementById("tasks-list"), OPEN);
    }
  }

  function tasksOpen() {
    const shown = panel();
    return Boolean(shown && !shown.hidden);
  }

  function isTasksButton(element) {
    return Boolean(element && element.id === TASKS_BUTTON);
  }

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("#" + TASKS_BUTTON)) {
      setTasksOpen(!tasksOpen());
    } else if (tasksOpen() && !target.closest("[data-tasks]")) {
      setTasksOpen(false);
    }
  });

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !tasksOpen()) return;
    const inside = document.activeElement && document.activeElement.closest("[data-tasks]");
    setTasksOpen(false);
    if (inside) {
      const button = tasksButton();
      if (button) button.focus();
    }
  });

  // A new indicator (polled, or out of band with the list) says whether the list is open.
  document.addEventListener("htmx:load", (event) => {
    const element = event.detail && event.detail.elt;
    if (isTasksButton(element)) element.setAttribute("aria-expanded", tasksOpen() ? "true" : "false");
  });

  document.addEventListener("htmx:beforeRequest", (event) => {
    const element = event.detail && event.detail.elt;
    if (isTasksButton(element) && (document.hidden || element.dataset.tasksStale)) event.preventDefault();
  });

  document.addEventListener("htmx:beforeOnLoad", (event) => {
    const detail = event.detail || {};
    if (!isTasksButton(detail.elt) || !detail.xhr) return;
    if (detail.xhr.getResponseHeader("HX-Redirect")) {
      event.preventDefault();
      detail.elt.dataset.tasksStale = "true";
    }
  });

  document.addEventListener("htmx:beforeSwap", (event) => {
    const detail = event.detail || {};
    if (!isTasksButton(detail.elt) || !detail.xhr || detail.xhr.status !== 200) return;
    const answer = detail.serverResponse;
    if (answer === lastIndicator) detail.shouldSwap = false;
    lastIndicator = answer;
  });

  document.addEventListener("visibilitychange", () => {
    const button = tasksButton();
    if (!document.hidden && button && window.htmx) window.htmx.trigger(button, REFRESH);
  });

  document.addEventListener("DOMContentLoaded", initMenu);
})();
