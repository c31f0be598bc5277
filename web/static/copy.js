// Copy buttons for snippets. The buttons are hidden in the HTML and shown
// here, so without JavaScript there is no button that does nothing.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  if (!navigator.clipboard) return;
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) return;
    var label = button.textContent;
    var status = button.closest("section") && button.closest("section").querySelector(".copy-status");
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent).then(function () {
        button.textContent = "Copied";
        if (status) status.textContent = "Copied to the clipboard.";
        setTimeout(function () { button.textContent = label; }, 2000);
      }, function () {
        if (status) status.textContent = "Could not copy; select the text and copy it instead.";
      });
    });
  });
});
