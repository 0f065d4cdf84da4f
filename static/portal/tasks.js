// Live task progress: each [data-task-live] element (templates/portal/tasks/_live.html) follows its
// task over the websocket /ws/tasks/<task_id>/ until the task ends, showing its status, progress
// and log lines as they come. While the socket is open, the fragment's htmx polling (the fallback
// without websockets) is held back; if the socket fails before the end, polling takes over again.
// When the task ends, "flexplane:task-ended" bubbles up from the element (detail: taskId, status).
(function () {
  "use strict";

  const ENDED = "flexplane:task-ended";
  const sockets = new Map(); // task id -> {socket, element}

  function field(element, name) {
    return element.querySelector('[data-task-field="' + name + '"]');
  }

  function setText(element, name, text) {
    const node = field(element, name);
    if (node) node.textContent = text;
  }

  function statusText(message) {
    if (message.status === "succeeded") {
      return message.result && message.result !== "OK" ? "Succeeded (" + message.result + ")" : "Succeeded";
    }
    if (message.status === "failed") return "Failed: " + (message.result || "the task failed");
    return "Running…";
  }

  function show(element, message) {
    element.dataset.taskState = message.status;
    setText(element, "title", message.title || message.kind || "");
    setText(element, "status", statusText(message));
    const status = field(element, "status");
    if (status) {
      status.classList.toggle("text-red-700", message.status === "failed");
      status.classList.toggle("text-green-700", message.status === "succeeded");
      status.classList.toggle("text-sky-700", message.status === "running");
    }
    const progress = field(element, "progress");
    if (progress) {
      if (message.progress === null || message.progress === undefined) {
        progress.removeAttribute("value");
      } else {
        progress.value = Math.round(message.progress * 100);
        progress.textContent = progress.value + "%";
      }
    }
    const log = field(element, "log");
    if (log && message.log && message.log.length) {
      if (message.log_from === 0) log.textContent = "";
      log.append(message.log.map((line) => line + "\n").join(""));
      log.scrollTop = log.scrollHeight;
    }
    if (message.status === "failed") {
      const details = log && log.closest("details");
      if (details) details.open = true;
    }
  }

  function socketUrl(taskId) {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return scheme + "//" + window.location.host + "/ws/tasks/" + encodeURIComponent(taskId) + "/";
  }

  function follow(element) {
    const taskId = element.dataset.taskId;
    const state = element.dataset.taskState;
    if (!taskId || state === "succeeded" || state === "failed" || !("WebSocket" in window)) return;
    const known = sockets.get(taskId);
    if (known) {
      // htmx swapped the fragment: keep streaming into the new one.
      if (known.element.dataset.taskStream) element.dataset.taskStream = known.element.dataset.taskStream;
      known.element = element;
      return;
    }
    const entry = { socket: new WebSocket(socketUrl(taskId)), element: element, ended: false };
    sockets.set(taskId, entry);
    entry.socket.addEventListener("open", () => {
      entry.element.dataset.taskStream = "open";
    });
    entry.socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "task") {
        show(entry.element, message);
        if (message.status !== "running" && !entry.ended) {
          entry.ended = true;
          entry.element.dataset.taskStream = "done";
          entry.element.dispatchEvent(
            new CustomEvent(ENDED, { bubbles: true, detail: { taskId: taskId, status: message.status } })
          );
        }
      } else if (message.type === "error") {
        entry.ended = true;
        entry.element.dataset.taskStream = "done";
        entry.element.dataset.taskState = "failed";
        setText(entry.element, "status", message.message);
      } else if (message.type === "unavailable") {
        setText(entry.element, "status", "Waiting for Proxmox: " + message.message);
      }
    });
    entry.socket.addEventListener("close", () => {
      sockets.delete(taskId);
      if (!entry.ended) delete entry.element.dataset.taskStream; // polling takes over
    });
  }

  function followAll(root) {
    const scope = root && root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches("[data-task-live]")) follow(scope);
    scope.querySelectorAll("[data-task-live]").forEach(follow);
  }

  // Hold back the fallback polling of a fragment whose task streams over the websocket.
  document.addEventListener("htmx:beforeRequest", (event) => {
    const element = event.detail && event.detail.elt;
    if (element && element.dataset && element.dataset.taskStream) event.preventDefault();
  });
  document.addEventListener("htmx:load", (event) => followAll(event.detail && event.detail.elt));
  document.addEventListener("DOMContentLoaded", () => followAll(document));
})();
