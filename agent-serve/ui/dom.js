// Small helpers for building the pages: elements, figures, times.

/**
 * An element: `h('a', {href: '#'}, 'text', child)`; `on*` attributes are
 * listeners, `style` an object of CSS properties.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    // Through the CSSOM: the pages' policy refuses style attributes.
    else if (key === 'style') Object.assign(el.style, value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace what `el` holds. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function json(value) {
  return h('pre', {}, JSON.stringify(value, null, 2));
}

export function errorBox(error) {
  return h('div', { class: 'error-box', role: 'alert' }, error?.message ?? String(error));
}

export function badge(text) {
  return h('span', { class: 'badge ' + String(text).replace(/[^a-z_]/gi, '') }, String(text).replaceAll('_', ' '));
}

export function ms(value) {
  if (value === undefined || value === null) return '–';
  if (value < 1000) return `${Math.round(value)} ms`;
  if (value < 60000) return `${(value / 1000).toFixed(value < 10000 ? 2 : 1)} s`;
  return `${Math.floor(value / 60000)} min ${Math.round((value % 60000) / 1000)} s`;
}

export function count(value) {
  return value === undefined || value === null ? '–' : Number(value).toLocaleString('en');
}

export function when(millis) {
  if (!millis) return '–';
  return new Date(millis).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'medium' });
}

/** A link into the pages: `link('#/runs/' + id, id)`. */
export function link(href, text) {
  return h('a', { href }, text);
}

/** A table: `columns` are `[heading, cell(row)]`; `open(row)` makes a row a link. */
export function table(columns, rows, open) {
  const body = rows.map((row) => {
    const cells = columns.map(([, cell, narrow]) => h('td', { class: narrow ? 'hide-narrow' : null }, cell(row)));
    if (!open) return h('tr', {}, cells);
    const tr = h('tr', { class: 'clickable' }, cells);
    tr.addEventListener('click', (e) => { if (e.target.tagName !== 'A' && e.target.tagName !== 'BUTTON') open(row); });
    return tr;
  });
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, columns.map(([heading, , narrow]) => h('th', { class: narrow ? 'hide-narrow' : null }, heading)))),
    h('tbody', {}, body)));
}
