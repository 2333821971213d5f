// The API reference (`/docs`): the live OpenAPI document (`GET /openapi.json`, public)
// drawn as a page of the console. Operations by tag, each at its operation id's anchor
// (`/docs#job_create`): method, path, summary, description, authentication, parameters,
// request body and responses; then the component schemas (`#schema-Job`), with `$ref`s
// as links within the page. A filter narrows both. Descriptions are shown as text
// (paragraphs, lists, code spans; never parsed as HTML), so the page keeps to the
// console's Content-Security-Policy, which third-party renderers (Swagger UI, Redoc:
// innerHTML for Markdown, injected styles) break. Loaded on demand (its own chunk).

import { Fragment, type ComponentChildren, type JSX } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import {
  blocksOf,
  constraintsOf,
  hasStructure,
  inlinesOf,
  matches,
  nullableInner,
  operationsOf,
  resolve,
  schemaAnchor,
  schemaName,
  securityOf,
  splitNull,
  tagAnchor,
  tagsOf,
  typesOf,
  valueText,
  type Header,
  type Inline,
  type MediaType,
  type OpenApiDocument,
  type Operation,
  type Parameter,
  type Reference,
  type RequestBody,
  type Response,
  type Schema,
  type SecurityScheme,
} from "./openapi";
import { ErrorNote } from "./ui";

/** The document, fetched once per page load. */
let loaded: Promise<OpenApiDocument> | null = null;

function loadDocument(): Promise<OpenApiDocument> {
  loaded ??= fetch("/openapi.json", { headers: { Accept: "application/json" } }).then(async (r) => {
    if (!r.ok) throw new Error(`GET /openapi.json answered ${r.status}`);
    return (await r.json()) as OpenApiDocument;
  });
  loaded.catch(() => {
    loaded = null;
  });
  return loaded;
}

/** Inline schemas nest at most this deep before the page stops unfolding them. */
const MAX_DEPTH = 4;

/** What the page's pieces need from the document. */
interface Ctx {
  doc: OpenApiDocument;
  isSchema: (name: string) => boolean;
}

export function DocsPage({ query }: { query: URLSearchParams }) {
  const [doc, setDoc] = useState<OpenApiDocument | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState(() => query.get("q") ?? "");

  useEffect(() => {
    let live = true;
    loadDocument()
      .then((d) => live && setDoc(d))
      .catch((err: unknown) => live && setError(`Could not read the API document: ${err instanceof Error ? err.message : String(err)}.`));
    return () => void (live = false);
  }, []);

  // The browser looked for `#job_create` before the document was drawn: go there now,
  // as a fragment navigation (no reload), so that it scrolls and `:target` marks it.
  useEffect(() => {
    let id = "";
    try {
      id = decodeURIComponent(location.hash.slice(1));
    } catch {
      return;
    }
    if (doc && id && document.getElementById(id)) location.replace(location.href);
  }, [doc]);

  useEffect(() => {
    const was = document.title;
    document.title = "API reference · Berth";
    return () => void (document.title = was);
  }, []);

  const ctx = useMemo<Ctx | null>(() => {
    if (!doc) return null;
    const schemas = doc.components?.schemas ?? {};
    return { doc, isSchema: (name) => Object.prototype.hasOwnProperty.call(schemas, name) };
  }, [doc]);
  const ops = useMemo(() => (doc ? operationsOf(doc) : []), [doc]);
  const tags = useMemo(() => (doc ? tagsOf(doc, ops) : []), [doc, ops]);
  const schemaNames = useMemo(() => Object.keys(doc?.components?.schemas ?? {}), [doc]);

  // Each operation's and schema's elements are made once; the filter only hides the
  // ones it leaves out (re-making thousands of rows per key press would lag).
  const views = useMemo(() => {
    if (!ctx) return null;
    const schemas = ctx.doc.components?.schemas ?? {};
    return {
      toc: new Map(
        ops.map((o) => [
          o.id,
          <a href={`#${o.id}`}>
            {o.op.summary ? <Inlines inlines={inlinesOf(o.op.summary.replace(/\.$/, ""), ctx.isSchema)} /> : `${o.method.toUpperCase()} ${o.path}`}
          </a>,
        ]),
      ),
      ops: new Map(ops.map((o) => [o.id, <OperationView o={o} ctx={ctx} />])),
      schemas: new Map(schemaNames.map((n) => [n, <SchemaSection name={n} schema={schemas[n]!} ctx={ctx} />])),
      tags: new Map(tags.map((t) => [t.name, t.description ? <Prose text={t.description} ctx={ctx} /> : null])),
    };
  }, [ctx, ops, tags, schemaNames]);

  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!doc || !ctx || !views) return <p aria-busy="true">Loading the API document…</p>;

  const shownOps = new Set(ops.filter((o) => matches(o.haystack, filter)).map((o) => o.id));
  const shownSchemas = new Set(schemaNames.filter((n) => matches(n.toLowerCase(), filter)));
  const shownTags = new Set(tags.filter((t) => ops.some((o) => o.tag === t.name && shownOps.has(o.id))).map((t) => t.name));

  return (
    <div class="docs">
      <nav class="docs-toc" aria-label="API contents">
        <p class="toc-title">Contents</p>
        <ul>
          <li>
            <a href="#authentication">Authentication</a>
          </li>
          {tags.map((t) => (
            <li key={t.name} hidden={!shownTags.has(t.name)}>
              <a href={`#${tagAnchor(t.name)}`}>{t.name}</a>
              <ul>
                {ops
                  .filter((o) => o.tag === t.name)
                  .map((o) => (
                    <li key={o.id} hidden={!shownOps.has(o.id)}>
                      {views.toc.get(o.id)}
                    </li>
                  ))}
              </ul>
            </li>
          ))}
          <li hidden={shownSchemas.size === 0}>
            <a href="#schemas">Schemas</a>
          </li>
        </ul>
      </nav>
      <div class="docs-body">
        <h1 id="docs-title">
          {doc.info.title} API reference <span class="muted">{doc.info.version}</span>
        </h1>
        {doc.info.description && <Prose text={doc.info.description} ctx={ctx} />}
        <p class="hint">
          Drawn from <a href="/openapi.json">/openapi.json</a> (OpenAPI {doc.openapi}), the document this api serves
          {doc.info.license ? `; ${doc.info.license.name}` : ""}. Every path is under this origin.
        </p>
        <div class="filters docs-filter" role="search">
          <label>
            Filter operations and schemas
            <input
              type="search"
              id="docs-filter"
              value={filter}
              onInput={(e) => setFilter((e.currentTarget as HTMLInputElement).value)}
              placeholder="job_create, /v1/nodes, POST…"
              spellcheck={false}
              autoComplete="off"
            />
          </label>
          <p role="status" id="docs-count">
            {shownOps.size === ops.length && shownSchemas.size === schemaNames.length
              ? `${ops.length} operations on ${Object.keys(doc.paths ?? {}).length} paths, ${schemaNames.length} schemas`
              : `${shownOps.size} of ${ops.length} operations, ${shownSchemas.size} of ${schemaNames.length} schemas`}
          </p>
        </div>
        <Authentication ctx={ctx} />
        {tags.map((t) => (
          <section
            key={t.name}
            class="docs-tag"
            id={tagAnchor(t.name)}
            aria-labelledby={`${tagAnchor(t.name)}-h`}
            hidden={!shownTags.has(t.name)}
          >
            <h2 id={`${tagAnchor(t.name)}-h`}>{t.name}</h2>
            {views.tags.get(t.name)}
            {ops
              .filter((o) => o.tag === t.name)
              .map((o) => (
                <div key={o.id} hidden={!shownOps.has(o.id)}>
                  {views.ops.get(o.id)}
                </div>
              ))}
          </section>
        ))}
        <section id="schemas" aria-labelledby="schemas-h" hidden={shownSchemas.size === 0}>
          <h2 id="schemas-h">Schemas</h2>
          {schemaNames.map((name) => (
            <div key={name} hidden={!shownSchemas.has(name)}>
              {views.schemas.get(name)}
            </div>
          ))}
        </section>
      </div>
    </div>
  );
}

/** The document's security schemes, and which operations need none. */
function Authentication({ ctx }: { ctx: Ctx }) {
  const schemes = Object.entries(ctx.doc.components?.securitySchemes ?? {});
  return (
    <section id="authentication" aria-labelledby="authentication-h">
      <h2 id="authentication-h">Authentication</h2>
      {schemes.length === 0 ? (
        <p>The document declares no security scheme.</p>
      ) : (
        <dl class="facts">
          {schemes.map(([name, s]) => {
            const scheme = resolve<SecurityScheme>(ctx.doc, s);
            return (
              <Fragment key={name}>
                <dt>
                  <code>{name}</code>
                </dt>
                <dd>{scheme ? schemeText(scheme) : "unresolved"}</dd>
              </Fragment>
            );
          })}
        </dl>
      )}
      <p>Each operation says which scheme it needs; one marked “none” answers without credentials.</p>
    </section>
  );
}

function schemeText(s: SecurityScheme): string {
  let text: string;
  if (s.type === "http" && s.scheme?.toLowerCase() === "bearer")
    text = `HTTP bearer: send Authorization: Bearer <token>${s.bearerFormat ? ` (${s.bearerFormat})` : ""}`;
  else if (s.type === "http") text = `HTTP ${s.scheme ?? ""} authentication`;
  else if (s.type === "apiKey") text = `An API key in the ${s.in ?? "?"} ${s.name ?? ""}`;
  else if (s.type === "openIdConnect") text = `OpenID Connect (${s.openIdConnectUrl ?? ""})`;
  else text = s.type;
  return s.description ? `${text}. ${s.description}` : text;
}

function OperationView({ o, ctx }: { o: Operation; ctx: Ctx }) {
  const op = o.op;
  const security = securityOf(ctx.doc, op);
  const body = resolve<RequestBody>(ctx.doc, op.requestBody);
  const responses = Object.entries(op.responses ?? {});
  return (
    <article class="op" id={o.id} aria-labelledby={`${o.id}-h`}>
      <h3 id={`${o.id}-h`}>
        <a href={`#${o.id}`} class="op-link">
          <span class={`method m-${o.method}`}>{o.method.toUpperCase()}</span> <code class="op-path">{o.path}</code>
        </a>
      </h3>
      <p class="op-summary">
        {op.summary ? <Inlines inlines={inlinesOf(op.summary, ctx.isSchema)} /> : null}
        {op.deprecated ? <strong> Deprecated.</strong> : null} <span class="muted">Operation id</span>{" "}
        <code class="op-id">{op.operationId ?? "none"}</code>
      </p>
      {op.description && <Prose text={op.description} ctx={ctx} />}
      <p class="op-auth">
        <span class="muted">Authentication:</span>{" "}
        {security.length === 0
          ? "none"
          : security
              .map((req) => Object.keys(req).join(" and ") || "none (optional)")
              .join(", or ")}
      </p>
      {o.parameters.length > 0 && <Parameters params={o.parameters} ctx={ctx} id={o.id} />}
      {body && <Body body={body} ctx={ctx} id={o.id} />}
      {responses.length > 0 && (
        <>
          <h4 id={`${o.id}-responses`}>Responses</h4>
          <table class="grid docs-table" aria-labelledby={`${o.id}-responses`}>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Description</th>
                <th scope="col">Content</th>
              </tr>
            </thead>
            <tbody>
              {responses.map(([status, r]) => (
                <ResponseRow key={status} status={status} response={resolve<Response>(ctx.doc, r)} ctx={ctx} />
              ))}
            </tbody>
          </table>
        </>
      )}
    </article>
  );
}

function Parameters({ params, ctx, id }: { params: Parameter[]; ctx: Ctx; id: string }) {
  return (
    <>
      <h4 id={`${id}-parameters`}>Parameters</h4>
      <table class="grid docs-table" aria-labelledby={`${id}-parameters`}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">In</th>
            <th scope="col">Type</th>
            <th scope="col">Required</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {params.map((p) => {
            const schema = p.schema ?? Object.values(p.content ?? {})[0]?.schema;
            return (
              <tr key={`${p.in}:${p.name}`}>
                <th scope="row">
                  <code>{p.name}</code>
                </th>
                <td>{p.in}</td>
                <td>
                  <TypeOf schema={schema} ctx={ctx} />
                  <Constraints schema={schema} />
                </td>
                <td>{p.required || p.in === "path" ? "required" : "optional"}</td>
                <td>
                  {p.deprecated ? <strong>Deprecated. </strong> : null}
                  {p.description ? <Prose text={p.description} ctx={ctx} /> : null}
                  {hasStructure(schema) ? <SchemaDetail schema={schema!} ctx={ctx} depth={1} /> : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

function Body({ body, ctx, id }: { body: RequestBody; ctx: Ctx; id: string }) {
  return (
    <>
      <h4 id={`${id}-body`}>Request body {body.required ? <span class="muted">(required)</span> : <span class="muted">(optional)</span>}</h4>
      {body.description && <Prose text={body.description} ctx={ctx} />}
      <Contents content={body.content} ctx={ctx} />
    </>
  );
}

/** Media types and their schemas (a request body's or a response's). */
function Contents({ content, ctx }: { content: Record<string, MediaType> | undefined; ctx: Ctx }) {
  const entries = Object.entries(content ?? {});
  if (entries.length === 0) return <span class="muted">no content</span>;
  return (
    <ul class="media">
      {entries.map(([type, media]) => (
        <li key={type}>
          <code class="media-type">{type}</code>
          {media.schema !== undefined && (
            <>
              {": "}
              <TypeOf schema={media.schema} ctx={ctx} />
              {hasStructure(media.schema) ? <SchemaDetail schema={media.schema} ctx={ctx} depth={1} /> : null}
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

function ResponseRow({ status, response, ctx }: { status: string; response: Response | null; ctx: Ctx }) {
  const headers = Object.entries(response?.headers ?? {});
  return (
    <tr>
      <th scope="row">
        <code class="status">{status}</code>
      </th>
      <td>
        {response?.description ? <Prose text={response.description} ctx={ctx} /> : null}
        {headers.length > 0 && (
          <ul class="media">
            {headers.map(([name, h]) => {
              const header = resolve<Header>(ctx.doc, h as Header | Reference);
              return (
                <li key={name}>
                  Header <code>{name}</code>: <TypeOf schema={header?.schema} ctx={ctx} />
                  {header?.description ? ` — ${header.description}` : ""}
                </li>
              );
            })}
          </ul>
        )}
      </td>
      <td>{response ? <Contents content={response.content} ctx={ctx} /> : <span class="muted">unresolved</span>}</td>
    </tr>
  );
}

function SchemaSection({ name, schema, ctx }: { name: string; schema: Schema; ctx: Ctx }) {
  return (
    <article class="schema" id={schemaAnchor(name)} aria-labelledby={`${schemaAnchor(name)}-h`}>
      <h3 id={`${schemaAnchor(name)}-h`}>
        <a href={`#${schemaAnchor(name)}`} class="op-link">
          <code>{name}</code>
        </a>{" "}
        <span class="schema-type">
          <TypeOf schema={schema} ctx={ctx} top />
        </span>
      </h3>
      {typeof schema === "object" && schema.description && <Prose text={schema.description} ctx={ctx} />}
      <Constraints schema={schema} />
      <SchemaDetail schema={schema} ctx={ctx} depth={0} />
    </article>
  );
}

/** A schema's type on one line: `string (date-time)`, `array of Job`, `string | null`,
 * `map of string → integer`, a `$ref` as a link. With `top`, a component schema's own
 * `$ref`-free summary (`object`, `one of 2`). */
function TypeOf({ schema, ctx, top = false }: { schema: Schema | undefined; ctx: Ctx; top?: boolean }): JSX.Element {
  if (schema === undefined || schema === true) return <span class="type">any</span>;
  if (schema === false) return <span class="type">nothing</span>;
  if (schema.$ref) {
    const name = schemaName(schema.$ref);
    return name && ctx.isSchema(name) ? (
      <a href={`#${schemaAnchor(name)}`} class="type ref">
        {name}
      </a>
    ) : (
      <code class="type">{schema.$ref}</code>
    );
  }
  const variants = schema.oneOf ?? schema.anyOf;
  if (variants) {
    const { rest, nullable } = splitNull(variants);
    if (top || rest.length > 3) return <span class="type">{`${schema.oneOf ? "one" : "any"} of ${variants.length}`}</span>;
    return (
      <span class="type">
        {join(
          rest.map((v, i) => <TypeOf key={i} schema={v} ctx={ctx} />),
          " | ",
        )}
        {nullable ? " | null" : ""}
      </span>
    );
  }
  if (schema.allOf) {
    if (top || schema.allOf.length > 3) return <span class="type">{`all of ${schema.allOf.length}`}</span>;
    return (
      <span class="type">
        {join(
          schema.allOf.map((v, i) => <TypeOf key={i} schema={v} ctx={ctx} />),
          " & ",
        )}
      </span>
    );
  }
  const { types, nullable } = typesOf(schema);
  if (types.length === 0 && nullable && !schema.enum && !("const" in schema) && !schema.properties) return <span class="type">null</span>;
  const parts: ComponentChildren[] = [];
  const shown = types.length > 0 ? types : schema.enum ? ["enum"] : "const" in schema ? ["const"] : schema.properties ? ["object"] : [];
  for (const t of shown) {
    if (t === "array") {
      parts.push(
        <>
          array of <TypeOf schema={schema.items} ctx={ctx} />
        </>,
      );
    } else if (t === "object" && schema.additionalProperties !== undefined && schema.additionalProperties !== false && !schema.properties) {
      const keys = schema.propertyNames;
      parts.push(
        <>
          map of {keys && typeof keys === "object" && !keys.$ref ? typesOf(keys).types.join(" | ") || "string" : "string"} →{" "}
          <TypeOf schema={schema.additionalProperties} ctx={ctx} />
        </>,
      );
    } else if (t === "const") parts.push(<>{`= ${valueText(schema.const)}`}</>);
    else parts.push(<>{schema.format ? `${t} (${schema.format})` : t}</>);
  }
  if (parts.length === 0) parts.push(<>any</>);
  return (
    <span class="type">
      {join(parts, " | ")}
      {nullable ? " | null" : ""}
    </span>
  );
}

function join(items: ComponentChildren[], sep: string): ComponentChildren[] {
  return items.flatMap((x, i) => (i === 0 ? [x] : [sep, x]));
}

function Constraints({ schema }: { schema: Schema | undefined }) {
  if (!schema || typeof schema !== "object") return null;
  const list = constraintsOf(schema);
  return list.length > 0 ? <span class="constraints muted"> {list.join(", ")}</span> : null;
}

/** A schema unfolded: its enum values, properties, variants, items or values. */
function SchemaDetail({ schema, ctx, depth }: { schema: Schema; ctx: Ctx; depth: number }) {
  if (typeof schema !== "object" || schema.$ref || depth > MAX_DEPTH) return null;
  // `X | null`: its type line says so; unfold X.
  const inner = nullableInner(schema);
  if (inner !== null) return <SchemaDetail schema={inner} ctx={ctx} depth={depth} />;
  const variants = schema.oneOf ?? schema.anyOf;
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  return (
    <div class={depth > 0 ? "schema-detail nested" : "schema-detail"}>
      {schema.enum && schema.enum.length > 0 && (
        <p class="enum">
          <span class="muted">One of: </span>
          {join(
            schema.enum.map((v, i) => <code key={i}>{valueText(v)}</code>),
            ", ",
          )}
        </p>
      )}
      {props.length > 0 && (
        <table class="grid docs-table props">
          <thead>
            <tr>
              <th scope="col">Property</th>
              <th scope="col">Type</th>
              <th scope="col">Required</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {props.map(([name, p]) => (
              <tr key={name}>
                <th scope="row">
                  <code>{name}</code>
                </th>
                <td>
                  <TypeOf schema={p} ctx={ctx} />
                  <Constraints schema={p} />
                </td>
                <td>{required.has(name) ? "required" : "optional"}</td>
                <td>
                  <Prose text={descriptionOf(p)} ctx={ctx} />
                  {hasStructure(p) ? <SchemaDetail schema={p} ctx={ctx} depth={depth + 1} /> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {variants && variants.length > 0 && <Variants label={schema.oneOf ? "One of" : "Any of"} variants={variants} ctx={ctx} depth={depth} />}
      {schema.allOf && schema.allOf.length > 0 && <Variants label="All of" variants={schema.allOf} ctx={ctx} depth={depth} />}
      {schema.items !== undefined && hasStructure(schema.items) && (
        <div>
          <span class="muted">Items:</span>
          <SchemaDetail schema={schema.items} ctx={ctx} depth={depth + 1} />
        </div>
      )}
      {schema.properties && schema.additionalProperties !== undefined && schema.additionalProperties !== false && (
        <p>
          <span class="muted">Other properties: </span>
          <TypeOf schema={schema.additionalProperties} ctx={ctx} />
        </p>
      )}
      {!schema.properties && typeof schema.additionalProperties === "object" && hasStructure(schema.additionalProperties) && (
        <div>
          <span class="muted">Values:</span>
          <SchemaDetail schema={schema.additionalProperties} ctx={ctx} depth={depth + 1} />
        </div>
      )}
    </div>
  );
}

function Variants({ label, variants, ctx, depth }: { label: string; variants: Schema[]; ctx: Ctx; depth: number }) {
  return (
    <div class="variants">
      <p class="muted">{label}:</p>
      <ol>
        {variants.map((v, i) => (
          <li key={i}>
            <TypeOf schema={v} ctx={ctx} />
            <Constraints schema={v} />
            {typeof v === "object" && v.description ? <Prose text={v.description} ctx={ctx} /> : null}
            {hasStructure(v) ? <SchemaDetail schema={v} ctx={ctx} depth={depth + 1} /> : null}
          </li>
        ))}
      </ol>
    </div>
  );
}

/** A property's description: its own, or (for `X | null` written as `oneOf`) the one
 * beside X's `$ref`. */
function descriptionOf(p: Schema): string {
  if (typeof p !== "object") return "";
  const inner = nullableInner(p);
  return p.description ?? (inner !== null && typeof inner === "object" ? inner.description : undefined) ?? "";
}

/** A description as text: paragraphs, lists, code spans, schema links; never HTML. */
function Prose({ text, ctx }: { text: string; ctx: Ctx }) {
  const blocks = useMemo(() => blocksOf(text, ctx.isSchema), [text, ctx]);
  if (blocks.length === 0) return null;
  return (
    <div class="prose">
      {blocks.map((b, i) =>
        b.kind === "p" ? (
          <p key={i}>
            <Inlines inlines={b.inlines} />
          </p>
        ) : (
          <ul key={i}>
            {b.items.map((item, j) => (
              <li key={j}>
                <Inlines inlines={item} />
              </li>
            ))}
          </ul>
        ),
      )}
    </div>
  );
}

function Inlines({ inlines }: { inlines: Inline[] }) {
  return (
    <>
      {inlines.map((x, i) => {
        if (x.kind === "text") return x.text;
        if (x.kind === "strong") return <strong key={i}>{x.text}</strong>;
        if (x.kind === "link") return <a key={i} href={x.href} rel="noreferrer">{x.text}</a>;
        return x.schema ? (
          <a key={i} href={`#${schemaAnchor(x.schema)}`}>
            <code>{x.text}</code>
          </a>
        ) : (
          <code key={i}>{x.text}</code>
        );
      })}
    </>
  );
}
