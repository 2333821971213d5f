// The OpenAPI 3.1 document as the API reference page (`/docs`) reads it: just the parts
// it renders, the operations gathered by tag, and descriptions split into paragraphs,
// list items and inline pieces (code spans, rustdoc links to schemas). Nothing here makes
// HTML: the page turns these pieces into elements whose text is set as text.

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it), for what the page shows. */
export type Schema = boolean | SchemaObject;

export interface SchemaObject {
  $ref?: string;
  type?: string | string[];
  format?: string;
  title?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  prefixItems?: Schema[];
  additionalProperties?: Schema;
  propertyNames?: Schema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  default?: unknown;
  example?: unknown;
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  readOnly?: boolean;
  writeOnly?: boolean;
  deprecated?: boolean;
  /** OpenAPI 3.0's way of saying `type: [..., "null"]`. */
  nullable?: boolean;
}

export interface Reference {
  $ref: string;
}

export interface Parameter {
  name: string;
  in: string;
  description?: string;
  required?: boolean;
  deprecated?: boolean;
  schema?: Schema;
  content?: Record<string, MediaType>;
}

export interface MediaType {
  schema?: Schema;
}

export interface RequestBody {
  description?: string;
  required?: boolean;
  content?: Record<string, MediaType>;
}

export interface Header {
  description?: string;
  required?: boolean;
  schema?: Schema;
}

export interface Response {
  description?: string;
  headers?: Record<string, Header | Reference>;
  content?: Record<string, MediaType>;
}

export type SecurityRequirement = Record<string, string[]>;

export interface OperationObject {
  tags?: string[];
  summary?: string;
  description?: string;
  operationId?: string;
  parameters?: (Parameter | Reference)[];
  requestBody?: RequestBody | Reference;
  responses?: Record<string, Response | Reference>;
  security?: SecurityRequirement[];
  deprecated?: boolean;
}

export interface SecurityScheme {
  type: string;
  description?: string;
  scheme?: string;
  bearerFormat?: string;
  name?: string;
  in?: string;
  openIdConnectUrl?: string;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string; license?: { name: string; url?: string } };
  paths?: Record<string, Record<string, unknown>>;
  components?: {
    schemas?: Record<string, Schema>;
    securitySchemes?: Record<string, SecurityScheme | Reference>;
    parameters?: Record<string, Parameter | Reference>;
    requestBodies?: Record<string, RequestBody | Reference>;
    responses?: Record<string, Response | Reference>;
    headers?: Record<string, Header | Reference>;
  };
  tags?: { name: string; description?: string }[];
  security?: SecurityRequirement[];
}

/** The HTTP methods a path item may hold, in the order the page lists them. */
export const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"] as const;

/** One operation as the page lists it. */
export interface Operation {
  method: string;
  path: string;
  /** The operation id, or one made from the method and path; the operation's anchor. */
  id: string;
  /** The first tag (the page lists each operation once). */
  tag: string;
  op: OperationObject;
  /** The path item's parameters and the operation's (the operation's win), resolved. */
  parameters: Parameter[];
  /** Lower-cased text the filter searches: method, path, id, summary and tag. */
  haystack: string;
}

/** The tag of operations that carry none. */
export const UNTAGGED = "other";

const SCHEMA_PREFIX = "#/components/schemas/";

/** A schema's name when `ref` points at a component schema. */
export function schemaName(ref: string): string | null {
  return ref.startsWith(SCHEMA_PREFIX) ? decodePointer(ref.slice(SCHEMA_PREFIX.length)) : null;
}

/** The anchor of a component schema's section. */
export function schemaAnchor(name: string): string {
  return `schema-${name}`;
}

/** The anchor of a tag's section. */
export function tagAnchor(tag: string): string {
  return `tag-${tag}`;
}

function decodePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function isReference(x: unknown): x is Reference {
  return typeof x === "object" && x !== null && typeof (x as Reference).$ref === "string";
}

/** Follows local `$ref`s (`#/components/parameters/…`) to the object they name, at most a
 * few hops; `null` when one does not resolve. */
export function resolve<T>(doc: OpenApiDocument, x: T | Reference | undefined): T | null {
  let cur: unknown = x;
  for (let hops = 0; hops < 8 && isReference(cur); hops++) {
    const ref = cur.$ref;
    if (!ref.startsWith("#/")) return null;
    cur = ref
      .slice(2)
      .split("/")
      .map(decodePointer)
      .reduce<unknown>((node, key) => (node && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined), doc);
  }
  return cur === undefined || isReference(cur) ? null : (cur as T);
}

/** Every operation of the document, in its order (paths, then methods). */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  const out: Operation[] = [];
  const taken = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (!item || typeof item !== "object") continue;
    const shared = (Array.isArray(item.parameters) ? (item.parameters as (Parameter | Reference)[]) : [])
      .map((p) => resolve<Parameter>(doc, p))
      .filter((p): p is Parameter => p !== null);
    for (const method of METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op || typeof op !== "object") continue;
      const own = (op.parameters ?? []).map((p) => resolve<Parameter>(doc, p)).filter((p): p is Parameter => p !== null);
      const parameters = [...shared.filter((s) => !own.some((p) => p.name === s.name && p.in === s.in)), ...own];
      let id = op.operationId || `${method}-${path.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}`;
      while (taken.has(id)) id += "-";
      taken.add(id);
      const tag = op.tags?.[0] ?? UNTAGGED;
      out.push({
        method,
        path,
        id,
        tag,
        op,
        parameters,
        haystack: `${method} ${path} ${op.operationId ?? ""} ${op.summary ?? ""} ${tag}`.toLowerCase(),
      });
    }
  }
  return out;
}

/** The tags in the document's order, then those only operations name; with their
 * descriptions. */
export function tagsOf(doc: OpenApiDocument, ops: Operation[]): { name: string; description: string | null }[] {
  const out = (doc.tags ?? []).map((t) => ({ name: t.name, description: t.description ?? null }));
  for (const op of ops) if (!out.some((t) => t.name === op.tag)) out.push({ name: op.tag, description: null });
  return out;
}

/** Whether `text` matches a filter: every word of it appears in `text` (lower case). */
export function matches(text: string, filter: string): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  return words.every((w) => text.includes(w));
}

/** The security an operation asks for: its own list, else the document's; an empty list
 * (or none at all) means no credentials. */
export function securityOf(doc: OpenApiDocument, op: OperationObject): SecurityRequirement[] {
  return op.security ?? doc.security ?? [];
}

/** The non-null types a schema names (`["string", "null"]` → `["string"]`) and whether
 * it also allows null. */
export function typesOf(s: SchemaObject): { types: string[]; nullable: boolean } {
  const list = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  return { types: list.filter((t) => t !== "null"), nullable: list.includes("null") || s.nullable === true };
}

/** The ways a `oneOf`/`anyOf` may be `null` or something else: its variants other than
 * `{"type": "null"}`, and whether there was one. */
export function splitNull(variants: Schema[]): { rest: Schema[]; nullable: boolean } {
  const isNull = (v: Schema) => typeof v === "object" && v.type === "null" && Object.keys(v).every((k) => k === "type" || k === "description");
  return { rest: variants.filter((v) => !isNull(v)), nullable: variants.some(isNull) };
}

/** The schema a nullable wrapper holds (`oneOf: [{"type": "null"}, X]`, utoipa's
 * `Option<X>`), or `null` when `s` is not one. */
export function nullableInner(s: Schema | undefined): Schema | null {
  if (!s || typeof s !== "object" || s.properties || s.allOf) return null;
  const variants = s.oneOf ?? s.anyOf;
  if (!variants) return null;
  const { rest, nullable } = splitNull(variants);
  return nullable && rest.length === 1 ? rest[0]! : null;
}

/** Whether a schema has a structure worth a table of its own (properties, variants, an
 * enum), rather than a one-line type. */
export function hasStructure(s: Schema | undefined): boolean {
  if (!s || typeof s !== "object" || s.$ref) return false;
  const inner = nullableInner(s);
  if (inner !== null) return hasStructure(inner);
  return (
    (s.properties !== undefined && Object.keys(s.properties).length > 0) ||
    (s.oneOf !== undefined && s.oneOf.length > 0) ||
    (s.anyOf !== undefined && s.anyOf.length > 0) ||
    (s.allOf !== undefined && s.allOf.length > 0) ||
    (s.enum !== undefined && s.enum.length > 0) ||
    hasStructure(s.items) ||
    (typeof s.additionalProperties === "object" && hasStructure(s.additionalProperties))
  );
}

/** A value (`default`, `enum`, `const`) as JSON text. */
export function valueText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A schema's constraints in words: `≥ 0`, `at most 64 characters`, `default: null`. */
export function constraintsOf(s: SchemaObject): string[] {
  const out: string[] = [];
  if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) out.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  if (s.exclusiveMaximum !== undefined) out.push(`< ${s.exclusiveMaximum}`);
  if (s.multipleOf !== undefined) out.push(`a multiple of ${s.multipleOf}`);
  if (s.minLength !== undefined) out.push(`at least ${s.minLength} characters`);
  if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`);
  if (s.minItems !== undefined) out.push(`at least ${s.minItems} items`);
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`);
  if (s.uniqueItems) out.push("unique items");
  if (s.pattern !== undefined) out.push(`matches ${s.pattern}`);
  if (s.readOnly) out.push("read-only");
  if (s.writeOnly) out.push("write-only");
  if (s.deprecated) out.push("deprecated");
  if ("default" in s) out.push(`default: ${valueText(s.default)}`);
  return out;
}

// Descriptions: rustdoc-flavoured Markdown (utoipa copies doc comments). Shown as text:
// blank lines part paragraphs, `* `/`- ` lines are list items, `code` is code, [`Name`]
// links to the schema Name when there is one, **bold** is strong, [text](https://…) a
// link; anything else (HTML included) stays literal text.

/** An inline piece of a description. */
export type Inline =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string; schema: string | null }
  | { kind: "strong"; text: string }
  | { kind: "link"; text: string; href: string };

/** A block of a description: a paragraph, or a list of items. */
export type Block = { kind: "p"; inlines: Inline[] } | { kind: "ul"; items: Inline[][] };

const INLINE = /\[`([^`]+)`\](?:\(([^)\s]*)\))?|`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(((?:https?:\/\/|#)[^)\s]+)\)/g;

/** Splits a paragraph's text into inline pieces; `isSchema` says which names are schemas
 * ([`QueueJob`], [`Assignment::grant`] link to them). */
export function inlinesOf(text: string, isSchema: (name: string) => boolean): Inline[] {
  const out: Inline[] = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) out.push({ kind: "text", text: text.slice(last, m.index) });
    if (m[1] !== undefined) {
      const name = m[1].split("::").find((seg) => isSchema(seg)) ?? null;
      out.push({ kind: "code", text: m[1], schema: name });
    } else if (m[3] !== undefined) out.push({ kind: "code", text: m[3], schema: null });
    else if (m[4] !== undefined) out.push({ kind: "strong", text: m[4] });
    else if (m[5] !== undefined && m[6] !== undefined) out.push({ kind: "link", text: m[5], href: m[6] });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  return out;
}

/** A description's paragraphs and lists. Lines of a paragraph join with a space (as
 * Markdown's soft breaks), so a code span may cross a line end. */
export function blocksOf(text: string, isSchema: (name: string) => boolean): Block[] {
  const blocks: Block[] = [];
  let para: string[] = [];
  let items: string[] | null = null;
  const flush = () => {
    if (para.length) blocks.push({ kind: "p", inlines: inlinesOf(para.join(" "), isSchema) });
    para = [];
    if (items) blocks.push({ kind: "ul", items: items.map((i) => inlinesOf(i, isSchema)) });
    items = null;
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    const item = /^[*-]\s+(.*)$/.exec(line);
    if (!line) flush();
    else if (item) {
      if (para.length) {
        blocks.push({ kind: "p", inlines: inlinesOf(para.join(" "), isSchema) });
        para = [];
      }
      (items ??= []).push(item[1]!);
    } else if (items && /^\s/.test(raw)) items[items.length - 1] += ` ${line}`;
    else {
      if (items) flush();
      para.push(line);
    }
  }
  flush();
  return blocks;
}
