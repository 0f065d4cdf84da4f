// Forms shown again with errors: the first field in error takes the focus, so that a keyboard or
// screen-reader user lands where the fix is (its label, help and error are read with it: Django marks it
// aria-invalid and links them through aria-describedby). On load, and in what htmx swaps in; never
// when the user is already somewhere (a field focused, an autofocus honoured).
(function () {
  "use strict";

  const INVALID = 'form [aria-invalid="true"]:not([disabled]):not([type="hidden"])';

  function focusFirstError(root) {
    const active = document.activeElement;
    if (active && active !== document.body && active !== document.documentElement) return;
    const field = root.querySelector(INVALID);
    if (field) field.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    focusFirstError(document);
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    focusFirstError(event.target);
  });
})();
