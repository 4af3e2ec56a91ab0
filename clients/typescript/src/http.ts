// The exchange under every operation: send with retries, raise the typed error, walk cursor pages.
import { APIConnectionError, APITimeoutError, ResponseDecodeError, errorFor } from "./errors.js";

export interface RetryOptions {
  /** Retries per request (default 3). */
  maxRetries?: number;
  /** Longest wait in seconds; a longer Retry-After is not waited for (default 10). */
  maxWait?: number;
  /** First backoff in seconds when the server says nothing (default 0.5; doubles, with jitter). */
  backoff?: number;
}

export interface ApiRequest {
  method: string;
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: string;
  /** Of the body (default application/json). */
  contentType?: string;
  /** Safe to send again when no answer came (not: erase, delete-leaf, requeue, create-import). */
  idempotent?: boolean;
  /** Milliseconds; the client's default when absent. */
  timeoutMs?: number;
}

const RETRY_STATUSES = new Set([429, 503]);

/** `Retry-After` in seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const when = Date.parse(text);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - now) / 1000);
}

export class Transport {
  private readonly maxRetries: number;
  private readonly maxWait: number;
  private readonly backoff: number;

  constructor(
    private readonly baseUrl: string,
    private readonly headers: Record<string, string>,
    private readonly timeoutMs: number,
    retry: RetryOptions,
    private readonly fetchFn: typeof fetch,
  ) {
    this.maxRetries = retry.maxRetries ?? 3;
    this.maxWait = retry.maxWait ?? 10;
    this.backoff = retry.backoff ?? 0.5;
  }

  private backoffSeconds(attempt: number): number {
    return Math.min(this.maxWait, this.backoff * 2 ** attempt * (0.5 + Math.random() / 2));
  }

  url(path: string, query?: ApiRequest["query"]): string {
    const url = new URL(path, this.baseUrl);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  /** Send with retries; the success answer, or the typed error. */
  async send(request: ApiRequest): Promise<Response> {
    const url = this.url(request.path, request.query);
    const headers =
      request.body === undefined
        ? this.headers
        : { ...this.headers, "Content-Type": request.contentType ?? "application/json" };
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchFn(url, {
          method: request.method,
          headers,
          body: request.body,
          signal: AbortSignal.timeout(request.timeoutMs ?? this.timeoutMs),
        });
      } catch (error) {
        const timedOut = error instanceof DOMException && error.name === "TimeoutError";
        // A refused connection never reached the server: always safe to try again.
        const neverSent = !timedOut && isConnectRefused(error);
        if (attempt < this.maxRetries && (neverSent || request.idempotent !== false)) {
          await sleep(this.backoffSeconds(attempt));
          continue;
        }
        const cls = timedOut ? APITimeoutError : APIConnectionError;
        throw new cls(`${request.method} ${request.path}: ${String(error)}`, { cause: error });
      }
      if (response.ok) return response;
      const told = retryAfterSeconds(response.headers.get("retry-after"));
      if (RETRY_STATUSES.has(response.status) && attempt < this.maxRetries && (told ?? 0) <= this.maxWait) {
        await response.body?.cancel();
        // At least what the server said; "Retry-After: 0" still backs off a little.
        await sleep(Math.max(told ?? 0, this.backoffSeconds(attempt)));
        continue;
      }
      const body = await response.text();
      throw errorFor(response.status, body, told, response.headers.get("x-request-id") ?? undefined);
    }
  }

  /** `send`, then the JSON object of the answer. */
  async json<T>(request: ApiRequest): Promise<T> {
    const response = await this.send(request);
    const text = await response.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    if (!data || typeof data !== "object" || Array.isArray(data)) {
      throw new ResponseDecodeError(`${request.method} ${request.path}: the answer is not a JSON object`, response.status);
    }
    return data as T;
  }

  /**
   * Every page of a cursor-paginated list, lazily. Only the `cursor` of a page's `next` link is
   * used: the client asks its own base URL again (a proxy's internal host name does no harm).
   */
  async *pages<P extends { next?: string | null }>(path: string, pageSize?: number): AsyncGenerator<P> {
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (;;) {
      const page = await this.json<P>({ method: "GET", path, query: { page_size: pageSize, cursor } });
      yield page;
      if (!page.next) return;
      const next = new URL(page.next, this.baseUrl).searchParams.get("cursor");
      if (next === null) throw new ResponseDecodeError(`GET ${path}: the next link has no cursor`, 200);
      if (seen.has(next)) throw new ResponseDecodeError(`GET ${path}: the next page repeats a cursor`, 200);
      seen.add(next);
      cursor = next;
    }
  }
}

function isConnectRefused(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } } | null)?.cause;
  return cause?.code === "ECONNREFUSED";
}

export function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
