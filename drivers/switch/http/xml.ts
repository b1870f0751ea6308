/**
 * XML as the REST switches speak it: replies parsed with fast-xml-parser into a small tree whose
 * elements carry their namespace (resolved from the `xmlns` declarations in scope), and request
 * bodies built with every text escaped (HIL sent hand-joined strings, one of them malformed).
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';

export interface XmlNode {
  /** the local name (without a prefix) */
  name: string;
  /** the namespace URI, '' when none is in scope */
  ns: string;
  /** the text directly inside the element, trimmed */
  text: string;
  children: XmlNode[];
}

export class XmlError extends Error {
  override name = 'XmlError';
}

const parser = new XMLParser({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: '', parseTagValue: false, trimValues: true, processEntities: true });

type Ordered = Record<string, unknown> & { ':@'?: Record<string, string> };

function build(entry: Ordered, scope: Record<string, string>): XmlNode | null {
  const tag = Object.keys(entry).find((k) => k !== ':@');
  if (!tag || tag === '#text' || tag.startsWith('?')) return null;
  const attrs = entry[':@'] ?? {};
  const inner: Record<string, string> = { ...scope };
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'xmlns') inner[''] = v;
    else if (k.startsWith('xmlns:')) inner[k.slice(6)] = v;
  }
  const colon = tag.indexOf(':');
  const prefix = colon < 0 ? '' : tag.slice(0, colon);
  const node: XmlNode = { name: colon < 0 ? tag : tag.slice(colon + 1), ns: inner[prefix] ?? '', text: '', children: [] };
  const texts: string[] = [];
  for (const child of (entry[tag] as Ordered[]) ?? []) {
    if ('#text' in child) texts.push(String(child['#text']));
    else {
      const c = build(child, inner);
      if (c) node.children.push(c);
    }
  }
  node.text = texts.join('').trim();
  return node;
}

/** The document element of `text`; throws XmlError for anything that is not well-formed XML. */
export function parseXml(text: string): XmlNode {
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlError(`not well-formed XML (${valid.err.msg.replace(/\s+/g, ' ')})`);
  const top = (parser.parse(text) as Ordered[]).map((e) => build(e, {})).filter((n): n is XmlNode => n !== null);
  if (top.length !== 1) throw new XmlError(`expected one document element, found ${top.length}`);
  return top[0]!;
}

/** The first child named `name` (and in namespace `ns`, when given). */
export function child(node: XmlNode | undefined, name: string, ns?: string): XmlNode | undefined {
  return node?.children.find((c) => c.name === name && (ns === undefined || c.ns === ns));
}

/** The element at the end of a path of child names, e.g. `allowed/vlan/add`. */
export function at(node: XmlNode | undefined, path: string, ns?: string): XmlNode | undefined {
  let n = node;
  for (const step of path.split('/')) n = child(n, step, ns);
  return n;
}

/** Every descendant named `name`, in document order. */
export function descendants(node: XmlNode, name: string): XmlNode[] {
  const out: XmlNode[] = [];
  const walk = (n: XmlNode) => {
    for (const c of n.children) {
      if (c.name === name) out.push(c);
      walk(c);
    }
  };
  walk(node);
  return out;
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** An element whose content is children (an array of built elements, joined) or escaped text. */
export function el(name: string, content: string | number | boolean | string[] = ''): string {
  const inner = Array.isArray(content) ? content.join('') : escapeXml(String(content));
  return `<${name}>${inner}</${name}>`;
}
