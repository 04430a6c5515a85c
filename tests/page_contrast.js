// The elements of the page a labeller cannot read well (WCAG 2.1 AA), as lines of text: text whose
// contrast with the background under it is under 4.5:1 (3:1 when large), and controls whose
// outline (or fill) is under 3:1 against what they stand on. Run by tests/test_serve_browser_keys.py.
const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const background = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
const low = [];
for (const el of document.querySelectorAll("body *")) {
  if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
  if (!el.getClientRects().length || el.closest(".visually-hidden")) continue;
  const s = getComputedStyle(el);
  if (el.closest("button:disabled")) continue;
  const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
  const r = ratio(rgb(s.color).slice(0, 3), background(el));
  if (r < (large ? 3 : 4.5)) low.push(`${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${r.toFixed(2)}`);
}
for (const el of document.querySelectorAll("button, input")) {
  if (!el.getClientRects().length || el.disabled) continue;
  const s = getComputedStyle(el);
  const r = ratio(rgb(s.borderTopColor).slice(0, 3), background(el.parentElement));
  const own = ratio(rgb(s.backgroundColor).slice(0,3), background(el.parentElement));
  if (r < 3 && own < 3) low.push(`border ${el.tagName}#${el.id}.${el.className} ${r.toFixed(2)}`);
}
return low;
