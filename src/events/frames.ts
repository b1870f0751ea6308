/**
 * An event stream's frames (src/events/hub.ts): one event's text for every stream, who may see
 * it and which filters let it through, and a flush's text shared by the streams that want the
 * same frames of it.
 */
import type { HistoryEntry } from '../../actors/runtime';
import { membersEvent, projectsOf, streamEvent, StreamEvent } from './types';

/** One event, ready for every stream: what the filters read, and its text. */
export interface Frame {
  position: number;
  kind: string;
  name: string;
  type: string;
  /** projects whose members may see it */
  projects: readonly string[];
  /** the SSE text: id, event, data lines */
  text: string;
  /** the text a project's members read, where it differs (types.ts, membersEvent) */
  memberText?: string;
}

/**
 * Who reads a stream: what they may see. `from`: per project, the position of its creation; an
 * event before it concerns an earlier project of that name (deleted since), not the viewer's.
 * `oidc`: an OpenID Connect caller (its rights are its token's groups, not a database user's),
 * with the projects whose creation or deletion changes what its groups give it.
 */
export interface Viewer { user: string; admin: boolean; projects: ReadonlySet<string>; from?: ReadonlyMap<string, number>; oidc?: ReadonlySet<string> }

/** The filters of a stream: each empty set lets everything through. */
export interface Filter { kinds: Set<string>; names: Set<string>; projects: Set<string>; types: Set<string> }

export const NO_FILTER: Filter = { kinds: new Set(), names: new Set(), projects: new Set(), types: new Set() };

const textOf = (event: StreamEvent) => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

export function frameOf(entry: HistoryEntry): Frame & { event: StreamEvent } {
  const event = streamEvent(entry);
  const members = membersEvent(event);
  return {
    position: entry.position, kind: event.kind, name: event.name, type: event.type, projects: projectsOf(entry), event,
    text: textOf(event), memberText: members && textOf(members),
  };
}

/** A frame's text for a viewer. */
export const textFor = (f: Frame, viewer: Viewer): string => (viewer.admin || f.memberText === undefined ? f.text : f.memberText);

export function visible(f: Frame, viewer: Viewer): boolean {
  return viewer.admin || f.projects.some((p) => viewer.projects.has(p) && f.position >= (viewer.from?.get(p) ?? 0));
}

export function matches(e: Frame, filter: Filter): boolean {
  if (filter.kinds.size && !filter.kinds.has(e.kind)) return false;
  if (filter.names.size && !filter.names.has(e.name)) return false;
  if (filter.projects.size && !e.projects.some((p) => filter.projects.has(p))) return false;
  if (filter.types.size && !filter.types.has(e.type) && !filter.types.has(`${e.type.split('.')[0]}.*`)) return false;
  return true;
}

/** What a flush needs of a stream: its key, and the text it wants of some frames. */
export interface FlushReader { readonly key: string; textOfAll(frames: readonly Frame[]): string | undefined }

/** Text written to many streams, encoded once: as it is, and as one HTTP chunk. */
export interface SharedText { body(): Buffer; chunk(): Buffer }

function sharedText(text: string): SharedText {
  let body: Buffer | undefined;
  let chunk: Buffer | undefined;
  return {
    body: () => (body ??= chunk ? chunk.subarray(chunk.indexOf('\r\n') + 2, chunk.length - 2) : Buffer.from(text, 'utf8')),
    // The text encoded once, straight into the chunk: its size line, the text, CRLF.
    chunk: () => {
      if (chunk) return chunk;
      const bytes = Buffer.byteLength(text, 'utf8');
      const head = `${bytes.toString(16)}\r\n`;
      chunk = Buffer.allocUnsafe(head.length + bytes + 2);
      chunk.write(head, 0, 'latin1');
      chunk.write(text, head.length, 'utf8');
      chunk.write('\r\n', head.length + bytes, 'latin1');
      return chunk;
    },
  };
}

/**
 * One flush's frames, and the text each key of stream wants of them, made once per key: with
 * 100 streams of a few kinds, the filters run a few times per frame instead of 100.
 */
export class Flush {
  private readonly texts = new Map<string, SharedText | null>();
  constructor(readonly frames: readonly Frame[]) {}

  textFor(s: FlushReader): SharedText | undefined {
    let t = this.texts.get(s.key);
    if (t === undefined) {
      const text = s.textOfAll(this.frames);
      t = text === undefined ? null : sharedText(text);
      this.texts.set(s.key, t);
    }
    return t ?? undefined;
  }
}

/** What decides the frames a stream wants and their text: who reads it, its filters, its naming. */
export function streamKey(viewer: Viewer, filter: Filter, named: boolean): string {
  const set = (xs: ReadonlySet<string>) => JSON.stringify([...xs].sort());
  const who = viewer.admin ? '*' : JSON.stringify([...viewer.projects].sort().map((p) => [p, viewer.from?.get(p) ?? 0]));
  return `${named ? 1 : 0}|${who}|${set(filter.kinds)}|${set(filter.names)}|${set(filter.projects)}|${set(filter.types)}`;
}
