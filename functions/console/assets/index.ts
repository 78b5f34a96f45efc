import { CONSOLE_SCRIPT } from './console-script';
import { STYLE } from './style';
import { HTMX, HTMX_SSE } from './vendor';

/** FNV-1a of a text, in hex: a content version for the URL of an asset of ours. */
function fnv(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export const ASSETS_PATH = '/console/assets';

const assets = [
  { name: HTMX.name, body: HTMX.body, type: 'text/javascript; charset=utf-8' },
  { name: HTMX_SSE.name, body: HTMX_SSE.body, type: 'text/javascript; charset=utf-8' },
  { name: `console-${fnv(STYLE)}.css`, body: STYLE, type: 'text/css; charset=utf-8' },
  { name: `console-${fnv(CONSOLE_SCRIPT)}.js`, body: CONSOLE_SCRIPT, type: 'text/javascript; charset=utf-8' },
];

/** Every asset by file name; each name carries its content's version, so it is cached for a year. */
export const assetByName = new Map(assets.map((a) => [a.name, a]));

export const assetUrls = {
  htmx: `${ASSETS_PATH}/${assets[0].name}`,
  sse: `${ASSETS_PATH}/${assets[1].name}`,
  style: `${ASSETS_PATH}/${assets[2].name}`,
  script: `${ASSETS_PATH}/${assets[3].name}`,
};
