// One Kubernetes API call the way @kubernetes/client-node's generated
// request factories and response processors make it, without them (they
// import the serializer and its ~950 models, docs/decisions/0026): the
// package's RequestContext from the configuration's server, its auth methods
// (the kubeconfig's bearer token, client certificates and dispatcher), its
// middleware both ways, its HTTP library; the body sent as plain JSON and the
// answer returned as the server's JSON, as a Watch delivers objects (no model
// classes, timestamps stay RFC 3339 strings). An error status throws the
// package's ApiException with the same code, message and body as its own
// response processors.
import type { Configuration, ConfigurationOptions } from '@kubernetes/client-node';
import {
  ApiException,
  HttpMethod,
  mergeConfiguration,
  RequiredError,
  type RequestContext,
  type ResponseContext,
} from '../client-node.ts';

export { HttpMethod };

export interface ApiRequest {
  method: HttpMethod;
  /** Path under the server, already encoded. */
  path: string;
  /** Query parameters; undefined ones are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON; `contentType` defaults to the package's choice, application/json. */
  body?: unknown;
  contentType?: string;
}

const ACCEPT = 'application/json, */*;q=0.8';

/** `type/sub+suffix`, lower-case and without parameters, as the package reads it. */
function mediaType(header: string | undefined): { type: string; tokens: string[] } | undefined {
  if (header === undefined) return undefined;
  const [type = '', subtype = ''] = (header.split(';')[0] ?? '').trim().toLowerCase().split('/');
  return { type, tokens: subtype.split('+') };
}

/** The body of a 2xx answer: JSON for a JSON-like type, text for text/*, else an error. */
async function parseBody(rsp: ResponseContext): Promise<unknown> {
  const type = mediaType(rsp.headers['content-type']);
  if (type === undefined) throw new Error('Cannot parse content. No Content-Type defined.');
  const text = await rsp.body.text();
  if (type.type === 'text') return text;
  if (type.type === 'application' && type.tokens.includes('json')) return JSON.parse(text);
  throw new Error(`The mediaType ${rsp.headers['content-type']} is not supported.`);
}

async function build(config: Configuration, req: ApiRequest): Promise<RequestContext> {
  const ctx = config.baseServer.makeRequestContext(req.path, req.method);
  ctx.setHeaderParam('Accept', ACCEPT);
  for (const [name, value] of Object.entries(req.query ?? {})) {
    if (value !== undefined) ctx.setQueryParam(name, String(value));
  }
  if (req.body !== undefined) {
    ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
    ctx.setBody(JSON.stringify(req.body));
  }
  await config.authMethods.BearerToken?.applySecurityAuthentication(ctx);
  await config.authMethods.default?.applySecurityAuthentication(ctx);
  return ctx;
}

/** Request → middleware → send → middleware back → the server's JSON, or ApiException. */
export async function callApi<T>(
  configuration: Configuration,
  options: ConfigurationOptions | undefined,
  req: ApiRequest,
): Promise<T> {
  const config = mergeConfiguration(configuration, options);
  let ctx = await build(config, req);
  for (const m of config.middleware) ctx = await m.pre(ctx).toPromise();
  let rsp = await config.httpApi.send(ctx).toPromise();
  for (const m of [...config.middleware].reverse()) rsp = await m.post(rsp).toPromise();
  const code = rsp.httpStatusCode;
  if (code >= 200 && code <= 299) return (await parseBody(rsp)) as T;
  if (code === 401) throw new ApiException(code, 'Unauthorized', undefined, rsp.headers);
  throw new ApiException(code, 'Unknown API Status Code!', await rsp.getBodyAsAny(), rsp.headers);
}

/** The package's check of a required parameter: its RequiredError when missing. */
export function required<T>(api: string, method: string, field: string, value: T): T {
  if (value === null || value === undefined) throw new RequiredError(api, method, field);
  return value;
}

/** A path segment, encoded as the package encodes it. */
export const segment = (value: unknown): string => encodeURIComponent(String(value));
