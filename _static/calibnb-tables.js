/* Tables wider than the column say so (issue 27, item 3).

   A table wider than its column scrolls sideways inside its own box (_static/calibnb.css), with a
   shadow on the side that hides columns. On a phone a shadow alone is easy to miss, so a box whose
   table does not fit gets the class `calibnb-scrolls`, which writes "Scroll sideways for more
   columns" above the table, and `at-end` once the reader has scrolled to its last column. */
(() => {
  'use strict';
  const BOXES = 'div.cell_output div.output.text_html, article .pst-scrollable-table-container';

  const mark = box => {
    const scrolls = box.querySelector('table') && box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle('calibnb-scrolls', Boolean(scrolls));
    box.classList.toggle('at-end', Boolean(scrolls) && box.scrollLeft + box.clientWidth >= box.scrollWidth - 2);
  };

  const start = () => {
    const boxes = [...document.querySelectorAll(BOXES)];
    for (const box of boxes) {
      mark(box);
      box.addEventListener('scroll', () => mark(box), {passive: true});
    }
    // widths settle once fonts and mathematics are in
    for (const event of ['resize', 'load']) window.addEventListener(event, () => boxes.forEach(mark));
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
