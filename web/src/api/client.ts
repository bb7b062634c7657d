// The one way the page talks to the server: the public HTTP API, with the bearer token the
// person gave (kept in this browser's localStorage), and every error in the API's one shape.
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

type Method = "get" | "post" | "put" | "delete";
type Json<R> = R extends { content: { "application/json": infer T } } ? T : never;
type Success<R> = R extends { 200: infer A } ? Json<A> : R extends { 201: infer A } ? Json<A> : never;

/** The JSON route `path` answers `method` with (its 200 or 201), named by the route rather than
 * by the model behind it: two models of one name in two modules get names the server makes up
 * (`plait__api__routes__drafts__DraftOut`), and those may change when one is renamed. */
export type Answer<P extends keyof paths, M extends Method = "get"> = paths[P][M] extends { responses: infer R }
  ? Success<R>
  : never;

const TOKEN_KEY = "plait.token";

export function token(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

/** An error the server answered with: `{"error": {code, message, details, hint}}`. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly hint: string | null;
  readonly details: unknown[];

  constructor(status: number, code: string, message: string, hint: string | null, details: unknown[]) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.details = details;
  }
}

type Listener = () => void;
const unauthorized = new Set<Listener>();

/** Called when the server asks for a token (401): the page then shows the token prompt. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorized.add(listener);
  return () => unauthorized.delete(listener);
}

export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const sent: Record<string, string> = { Accept: "application/json", ...extra };
  const bearer = token();
  if (bearer) sent.Authorization = `Bearer ${bearer}`;
  return sent;
}

export async function failure(response: Response): Promise<ApiError> {
  let body: { error?: { code?: string; message?: string; hint?: string | null; details?: unknown[] } } = {};
  try {
    body = await response.json();
  } catch {
    // not JSON (a proxy's page): fall through to the status line
  }
  const error = body.error ?? {};
  if (response.status === 401) unauthorized.forEach((listener) => listener());
  return new ApiError(
    response.status,
    error.code ?? `http_${response.status}`,
    error.message ?? `${response.status} ${response.statusText}`,
    error.hint ?? null,
    error.details ?? [],
  );
}

/** `method path` with an optional JSON body; resolves to the parsed JSON answer (null for 204). */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (cause) {
    throw new ApiError(0, "unreachable", "the server did not answer", "is `plait serve` still running?", [String(cause)]);
  }
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null as T;
  return (await response.json()) as T;
}

/** A request body that is a file's text (YAML or JSON), as `POST /api/graphs/import` takes it. */
export async function upload<T>(path: string, text: string, type: string): Promise<T> {
  const response = await fetch(path, { method: "POST", headers: headers({ "Content-Type": type }), body: text });
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

/** A multipart form (files and fields) as `POST path` takes it; the browser writes the
 * Content-Type with its boundary. */
export async function sendForm<T>(path: string, form: FormData): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, { method: "POST", headers: headers(), body: form });
  } catch (cause) {
    throw new ApiError(0, "unreachable", "the server did not answer", "is `plait serve` still running?", [String(cause)]);
  }
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

export async function download(path: string): Promise<string> {
  const response = await fetch(path, { headers: headers({ Accept: "*/*" }) });
  if (!response.ok) throw await failure(response);
  return response.text();
}

export const get = <T>(path: string) => call<T>("GET", path);
export const post = <T>(path: string, body?: unknown) => call<T>("POST", path, body ?? {});
export const put = <T>(path: string, body?: unknown) => call<T>("PUT", path, body ?? {});
export const del = <T>(path: string) => call<T>("DELETE", path);

export const q = encodeURIComponent;
