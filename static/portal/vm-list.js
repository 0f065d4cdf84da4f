// The VM list (templates/portal/vms/list.html): the table header's box ticks or clears every VM shown, and
// shows whether some, all or none are ticked. The table is redrawn by htmx (a search, a page): the
// listeners sit on the document, so they hold for every table drawn.
const ALL = "vm-select-all";

function boxes() {
  return [...document.querySelectorAll('#vm-table input[type="checkbox"][name="vms"]')];
}

function reflect() {
  const all = document.getElementById(ALL);
  if (!all) {
    return;
  }
  const ticked = boxes().filter((box) => box.checked).length;
  all.checked = ticked > 0 && ticked === boxes().length;
  all.indeterminate = ticked > 0 && ticked < boxes().length;
}

document.addEventListener("change", (event) => {
  const target = event.target;
  if (target.id === ALL) {
    for (const box of boxes()) {
      box.checked = target.checked;
    }
  } else if (target.name === "vms") {
    reflect();
  }
});
document.addEventListener("htmx:afterSwap", reflect);
