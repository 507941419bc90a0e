// Progressive enhancement only: every page reads and every form works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Ask before a roll-back or a delete.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // A delete needs its box ticked: ticking it for the person after they confirmed.
  for (const form of document.querySelectorAll("form[action='/document-delete']")) {
    form.addEventListener("submit", () => {
      const box = form.querySelector("input[name='confirm']");
      if (box) box.checked = true;
    });
  }
  // "/" focuses the search box.
  const box = document.getElementById("search-box");
  document.addEventListener("keydown", (event) => {
    if (box && event.key === "/" && document.activeElement === document.body) {
      event.preventDefault();
      box.focus();
    }
  });
});
