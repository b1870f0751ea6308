/**
 * The inventory file of `hilt import` and `hilt export` (docs/import.md): switches with their
 * ports, nodes with their BMC, metadata and nics, and each nic's port. Read from YAML or CSV
 * with the line of every object, so that every error names its line.
 */

/** HIL's type identifiers; a file may give the last part alone (`mock`, `ipmi`). */
export const SWITCH_SCHEMA = 'http://schema.massopencloud.org/haas/v0/switches/';
export const OBM_SCHEMA = 'http://schema.massopencloud.org/haas/v0/obm/';

export const fullType = (schema: string, t: string): string => (t.includes('://') ? t : schema + t);
export const shortType = (schema: string, t: string): string => (t.startsWith(schema) ? t.slice(schema.length) : t);

export type Scalar = string | number | boolean;

export interface SwitchSpec {
  name: string;
  /** the full type identifier */
  type: string;
  /** driver fields besides the type (hostname, username, password, …) */
  fields: Record<string, unknown>;
  ports: string[];
  line: number;
}

export interface NicSpec { name: string; macaddr: string; switch: string | null; port: string | null; line: number }

export interface NodeSpec {
  name: string;
  obm: { type: string; fields: Record<string, unknown> };
  metadata: Record<string, Scalar>;
  /** a CSV's: text that stands for a value of any type (compared as text); YAML's are typed */
  metadataText?: boolean;
  nics: NicSpec[];
  line: number;
}

/** A port of a switch the file names without describing it (a CSV row with only `switch` and `port`). */
export interface PortRef { switch: string; port: string; line: number }

/** `ports`: ports of switches that are not among `switches` (registered ones, or a problem). */
export interface Inventory { switches: SwitchSpec[]; nodes: NodeSpec[]; ports: PortRef[] }

/** A problem of the file, at its line (0: the file as a whole). */
/** `failed`: the server failed the call (5xx), which is no fault of the file (exit code 3). */
export interface Problem { line: number; message: string; failed?: boolean }

export class InventoryErrors extends Error {
  constructor(readonly file: string, readonly problems: Problem[]) {
    super(problems.map((p) => `${file}${p.line ? `:${p.line}` : ''}: ${p.message}`).join('\n'));
  }
}

/** The inventory as `GET /admin/inventory` gives it (src/routes/inventory.ts). */
export interface ServerInventory {
  /** `host_key`: an SSH switch's host key fingerprint, when one is pinned or recorded */
  switches: { name: string; type: string; fields: Record<string, unknown>; host_key?: string; ports: string[] }[];
  nodes: { name: string; obm: { type: string; fields: Record<string, unknown> }; metadata: Record<string, Scalar>; nics: { name: string; macaddr: string; switch: string | null; port: string | null }[] }[];
}
