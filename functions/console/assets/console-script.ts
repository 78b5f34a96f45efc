/**
 * The console's own script (no inline scripts under its CSP): counts down the solo-mode wait on
 * pending cards, so a person sees when the decision may be taken. Pages work without it.
 */
export const CONSOLE_SCRIPT = `(() => {
  const tick = () => {
    for (const el of document.querySelectorAll('[data-decidable-at]')) {
      const left = Math.ceil((Date.parse(el.getAttribute('data-decidable-at')) - Date.now()) / 1000);
      el.textContent = left > 0 ? 'Solo mode: can be decided in ' + left + ' s' : 'Solo mode: can be decided now';
    }
  };
  tick();
  setInterval(tick, 1000);
})();
`;
