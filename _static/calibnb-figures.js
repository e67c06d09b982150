/* Figures a reader can read on any screen (issue 27, item 4).

   The book's figures are drawn for its text column (calibnb.plots.COLUMN_WIDTH: 7 inches at 100
   dpi, about 700 px), so a 9-point label is 9 points where the column is that wide. On a phone the
   browser shrinks the whole image to the screen, and a grid of panels becomes too small to read.
   Every image of a page's article is therefore a button: where the page shows it smaller than it
   was drawn, a tap (or Enter) opens it at its full size in a dialog of its own, with its caption,
   scrolling sideways where it is wider than the screen; Escape, the Close button or a tap beside
   it closes the dialog. Where the image is shown at its full size already (a laptop), the button
   is disabled and nothing changes. No library, nothing fetched: the page's own image is shown. */
(() => {
  'use strict';
  // an image shown at less than this share of its drawn width is worth opening
  const SHRUNK = 0.9;
  let dialog = null;

  const build = () => {
    dialog = document.createElement('dialog');
    dialog.className = 'calibnb-figure-dialog';
    dialog.setAttribute('aria-label', 'Figure at full size');
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'calibnb-figure-close';
    close.textContent = 'Close';
    close.addEventListener('click', () => dialog.close());
    const frame = document.createElement('div');
    frame.className = 'calibnb-figure-frame';
    dialog.append(close, frame);
    // a tap on the dialog's own background (not on the figure) closes it
    dialog.addEventListener('click', event => {
      if (event.target === dialog || event.target === frame) dialog.close();
    });
    document.body.appendChild(dialog);
  };

  const open = image => {
    if (!dialog) build();
    const frame = dialog.querySelector('.calibnb-figure-frame');
    const copy = image.cloneNode();
    copy.removeAttribute('width');
    copy.removeAttribute('height');
    copy.removeAttribute('class');
    copy.style.width = `${image.naturalWidth}px`;
    frame.replaceChildren(copy);
    const caption = image.closest('figure') && image.closest('figure').querySelector('figcaption');
    if (caption) {
      const text = document.createElement('p');
      text.className = 'calibnb-figure-caption';
      text.textContent = caption.innerText.trim();
      frame.append(text);
    }
    dialog.showModal();
    frame.scrollTo(0, 0);
  };

  const shrunk = image =>
    image.naturalWidth > 0 && image.getBoundingClientRect().width < SHRUNK * image.naturalWidth;

  const update = () => {
    for (const button of document.querySelectorAll('button.calibnb-zoom')) {
      const image = button.querySelector('img');
      const small = shrunk(image);
      button.disabled = !small;
      button.classList.toggle('is-shrunk', small);
    }
  };

  const wrap = image => {
    if (image.closest('a, button, .explorable')) return;
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'calibnb-zoom';
    button.title = 'Open the figure at full size';
    image.replaceWith(button);
    button.appendChild(image);
    button.addEventListener('click', () => open(image));
    if (!image.complete) image.addEventListener('load', update);
  };

  const start = () => {
    document.querySelectorAll('main article figure img, main article .cell_output img').forEach(wrap);
    update();
    for (const event of ['resize', 'load']) window.addEventListener(event, update);
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
