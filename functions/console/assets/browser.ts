/**
 * The console's own script, bundled into console-script.ts by `npm run console:assets` (no inline
 * scripts under its CSP). Pages work without it; with it:
 * - the solo-mode wait on pending cards counts down, so a person sees when a decision may be taken;
 * - "Verify in this browser" checks a sealed trace with the SDK's own verifier (sdk/src/verify.ts,
 *   bundled, not copied): both signatures, the key, the chain, and each step's hash recomputed from
 *   the text this page shows for it, so what is shown is what is checked.
 */
import { verifyTraceCertificate } from '../../../sdk/src/verify';

const tick = () => {
  for (const el of document.querySelectorAll('[data-decidable-at]')) {
    const left = Math.ceil((Date.parse(el.getAttribute('data-decidable-at') ?? '') - Date.now()) / 1000);
    el.textContent = left > 0 ? `Solo mode: can be decided in ${left} s` : 'Solo mode: can be decided now';
  }
};

/** As the page prints a time (functions/console/views/traces.tsx). */
const shownTime = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

type Step = Record<string, unknown>;

/**
 * The certificate as this page shows it: each step card's type, text, metadata and time take the
 * place of the certificate's, so the verifier hashes what a person reads; and every other field
 * the page shows must read as the certificate says.
 */
function shownCertificate(doc: Document): { certificate: Record<string, unknown>; problems: string[] } {
  const holder = doc.getElementById('trace-certificate');
  const certificate = JSON.parse(holder?.dataset.certificate ?? 'null') as Record<string, unknown> & { steps?: Step[] };
  const problems: string[] = [];
  const steps = Array.isArray(certificate?.steps) ? certificate.steps : [];
  for (const card of doc.querySelectorAll<HTMLElement>('[data-step-index]')) {
    const index = Number(card.dataset.stepIndex);
    const step = steps[index];
    if (!step) {
      problems.push(`step ${index} is shown but not in the certificate`);
      continue;
    }
    steps[index] = {
      ...step,
      type: card.querySelector('[data-step-type]')?.textContent ?? '',
      content: card.querySelector('pre')?.textContent ?? '',
      metadata: JSON.parse(card.dataset.metadata ?? 'null'),
      created_at: card.dataset.createdAt,
    };
  }
  for (const el of doc.querySelectorAll<HTMLElement>('[data-certified]')) {
    const field = el.dataset.certified ?? '';
    const value = certificate?.[field];
    const expected = typeof value === 'string' && el.dataset.format === 'time' ? shownTime(value) : String(value);
    if ((el.textContent ?? '').trim() !== expected) problems.push(`the page's ${field} is not the certificate's`);
  }
  return { certificate, problems };
}

async function verifyShownTrace(out: HTMLElement) {
  out.className = 'notice';
  out.textContent = 'Checking…';
  try {
    const { certificate, problems } = shownCertificate(document);
    const check = await verifyTraceCertificate(certificate);
    const all = [...problems, ...check.problems];
    const ok = check.valid && problems.length === 0;
    out.className = `notice ${ok ? 'ok' : 'bad'}`;
    out.textContent = ok
      ? 'Valid: the key matches its id, every step shown hashes to its place in the chain, and both signatures (the root hash and the whole certificate) verify.'
      : `Invalid: ${all.join('; ')}.`;
  } catch (err) {
    out.className = 'notice bad';
    out.textContent = `Could not verify: ${(err as Error).message}`;
  }
}

tick();
setInterval(tick, 1000);
const button = document.getElementById('verify-signature');
const out = document.getElementById('verify-result');
if (button && out) button.addEventListener('click', () => verifyShownTrace(out));
