/**
 * The console's own script (no inline scripts under its CSP). Pages work without it; with it:
 * - the solo-mode wait on pending cards counts down, so a person sees when a decision may be taken;
 * - a sealed trace's signature is checked in the browser with WebCrypto against the public key in
 *   its certificate, as docs/change-control.md describes (key id, hash chain, RSA-PSS signature).
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

  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
  const sha256 = async (data) => hex(await crypto.subtle.digest('SHA-256', typeof data === 'string' ? new TextEncoder().encode(data) : data));

  async function verifyTrace(d) {
    const der = bytes(d.publicKey.replace(/-----[^-]+-----/g, '').replace(/\\s+/g, ''));
    const keyId = (await sha256(der)) === d.keyId;
    let chain = await sha256('');
    let previous = '';
    let links = true;
    for (const [integrity, stored] of JSON.parse(d.steps)) {
      chain = await sha256(previous + integrity);
      if (chain !== stored) links = false;
      previous = chain;
    }
    const root = links && chain === d.root;
    const key = await crypto.subtle.importKey('spki', der, { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['verify']);
    const signature = await crypto.subtle.verify({ name: 'RSA-PSS', saltLength: 32 }, key, bytes(d.signature), new TextEncoder().encode(d.root));
    return { keyId, root, signature };
  }

  const button = document.getElementById('verify-signature');
  const out = document.getElementById('verify-result');
  if (button && out) {
    button.addEventListener('click', async () => {
      out.className = 'notice';
      out.textContent = 'Checking…';
      try {
        const r = await verifyTrace(document.getElementById('trace-certificate').dataset);
        const ok = r.keyId && r.root && r.signature;
        out.className = 'notice ' + (ok ? 'ok' : 'bad');
        out.textContent = ok
          ? 'Signature valid: the public key matches its id, the steps chain to the root hash, and the signature over it verifies.'
          : 'Signature invalid: key id ' + (r.keyId ? 'ok' : 'mismatch') + ', chain ' + (r.root ? 'ok' : 'broken') + ', signature ' + (r.signature ? 'ok' : 'does not verify') + '.';
      } catch (err) {
        out.className = 'notice bad';
        out.textContent = 'Could not verify: ' + err.message;
      }
    });
  }
})();
`;
