// The console page (templates/portal/console/console.html): noVNC's RFB client on a websocket to this
// app (portal/console/consumers.py), which relays it to the VM's node. noVNC is the npm package
// @novnc/novnc, copied beside the portal's CSS when it is built (portal/theme/static_src).
import RFB from "../novnc/core/rfb.js";
import KeyTable from "../novnc/core/input/keysym.js";
import keysyms from "../novnc/core/input/keysymdef.js";

const screen = document.getElementById("console-screen");
const status = document.getElementById("console-status");
const keys = document.getElementById("console-ctrl-alt-del");
const fullScreen = document.getElementById("console-full-screen");
const pasteForm = document.getElementById("console-paste-form");
const pasteText = document.getElementById("console-paste-text");
const pasteType = document.getElementById("console-paste-type");
// What a US keyboard types with Shift held, beside the capitals.
const SHIFTED = '~!@#$%^&*()_+{}|:"<>?';

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
  pasteType.disabled = false;
  rfb.focus();
});
rfb.addEventListener("disconnect", (event) => {
  clearTimeout(patience);
  keys.disabled = true;
  pasteType.disabled = true;
  if (screen.dataset.state === "connecting" || screen.dataset.state === "connected") {
    say(event.detail.clean ? "The console closed." : "The connection to the console was lost.", "disconnected");
  }
});
rfb.addEventListener("desktopname", (event) => {
  screen.setAttribute("aria-label", `Console of ${event.detail.name}`);
});
keys.addEventListener("click", () => rfb.sendCtrlAltDel());

// Text typed into the VM as keystrokes (a VM's console has no clipboard of its own): each character's
// keysym, Shift held for those a US keyboard types with it, Enter for a new line, Tab for a tab.
function type(text) {
  for (const character of text) {
    if (character === "\r") {
      continue;
    }
    if (character === "\n" || character === "\t") {
      const [keysym, code] = character === "\n" ? [KeyTable.XK_Return, "Enter"] : [KeyTable.XK_Tab, "Tab"];
      rfb.sendKey(keysym, code);
      continue;
    }
    const shifted = (character >= "A" && character <= "Z") || SHIFTED.includes(character);
    if (shifted) {
      rfb.sendKey(KeyTable.XK_Shift_L, "ShiftLeft", true);
    }
    rfb.sendKey(keysyms.lookup(character.codePointAt(0)), null);
    if (shifted) {
      rfb.sendKey(KeyTable.XK_Shift_L, "ShiftLeft", false);
    }
  }
}
pasteForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = pasteText.value;
  if (text === "" || screen.dataset.state !== "connected") {
    return;
  }
  type(text);
  pasteText.value = "";
  say(`Typed ${[...text].length} character(s) into the VM.`, "connected");
  rfb.focus();
});

// The screen alone on the whole display (Esc, the browser's, leaves it); the VM's picture scales to it.
fullScreen.addEventListener("click", () => {
  if (document.fullscreenElement) {
    document.exitFullscreen();
  } else {
    screen.requestFullscreen().then(() => rfb.focus()).catch(() => say("This browser refused full screen.", screen.dataset.state));
  }
});
document.addEventListener("fullscreenchange", () => {
  fullScreen.textContent = document.fullscreenElement ? "Leave full screen" : "Full screen";
});
