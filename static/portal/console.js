// The console page (templates/portal/console/console.html): noVNC's RFB client on a websocket to this
// app (portal/console/consumers.py), which relays it to the VM's node. noVNC is the npm package
// @novnc/novnc, copied beside the portal's CSS when it is built (portal/theme/static_src).
import RFB from "../novnc/core/rfb.js";

const screen = document.getElementById("console-screen");
const status = document.getElementById("console-status");
const keys = document.getElementById("console-ctrl-alt-del");

// What the app's close codes mean, when it gives no reason of its own.
const CLOSED = {
  4401: "Your session ended.",
  4403: "This page's console was opened already: reload the page to open it again.",
  4404: "This VM does not exist, or is not yours.",
  4408: "The console was closed after a while without input.",
  4409: "The VM is not running.",
  4429: "Too many consoles are open.",
  4502: "The VM's node could not open the console.",
  4503: "A part of the platform did not answer: try again.",
};

function say(text, state) {
  status.textContent = text;
  screen.dataset.state = state;
}

const scheme = window.location.protocol === "https:" ? "wss" : "ws";
const socket = new WebSocket(`${scheme}://${window.location.host}${screen.dataset.socket}`, ["binary"]);
socket.binaryType = "arraybuffer";
// The app says why it closes a console in a text frame (RFB itself is binary), then closes.
let said = "";
socket.addEventListener("message", (event) => {
  if (typeof event.data === "string") {
    try {
      said = JSON.parse(event.data).message || "";
    } catch {
      said = "";
    }
  }
});
socket.addEventListener("close", (event) => {
  if (event.code === 4401) {
    // A reload renews the session (the identity provider answers silently while its own lasts).
    window.location.reload();
    return;
  }
  if (event.code >= 4000) {
    say(said || CLOSED[event.code] || "The console closed.", "refused");
  }
});

const rfb = new RFB(screen, socket);
rfb.scaleViewport = true;
rfb.resizeSession = false;
// The app closes a console the VM's node does not open in time, and says why; noVNC itself waits for ever
// on a socket that never opens or never greets. Past the app's own deadline (data-patience, seconds) the
// page gives up and says so.
const patience = setTimeout(() => {
  if (screen.dataset.state === "connecting") {
    say("The console did not answer in time: reload the page to try again.", "failed");
    rfb.disconnect();
  }
}, Number(screen.dataset.patience) * 1000);
rfb.addEventListener("connect", () => {
  clearTimeout(patience);
  say("Connected.", "connected");
  keys.disabled = false;
  rfb.focus();
});
rfb.addEventListener("disconnect", (event) => {
  clearTimeout(patience);
  keys.disabled = true;
  if (screen.dataset.state === "connecting" || screen.dataset.state === "connected") {
    say(event.detail.clean ? "The console closed." : "The connection to the console was lost.", "disconnected");
  }
});
rfb.addEventListener("desktopname", (event) => {
  screen.setAttribute("aria-label", `Console of ${event.detail.name}`);
});
keys.addEventListener("click", () => rfb.sendCtrlAltDel());
