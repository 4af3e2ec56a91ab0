// Typed errors: one class per kind of failure, chosen from the problem's `code`, then its status.
import type { components } from "./schema.js";

export type Problem = components["schemas"]["ProblemDetail"];

/** Every error the client throws. */
export class PersonaTreeError extends Error {
  override name = "PersonaTreeError";
}

/** No answer came (DNS, refused connection, reset). */
export class APIConnectionError extends PersonaTreeError {
  override name = "APIConnectionError";
}

/** The request took longer than its timeout. */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}

/** A success status whose body is not the JSON object the document describes. */
export class ResponseDecodeError extends PersonaTreeError {
  override name = "ResponseDecodeError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The server answered an error status; `problem` is its `application/problem+json` body. */
export class APIError extends PersonaTreeError {
  override name = "APIError";
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;
  readonly requestId: string | undefined;
  readonly problem: Partial<Problem>;
  /** For a batched ingest: the merged result of the batches stored before the failing one. */
  partial: unknown = undefined;

  constructor(status: number, problem: Partial<Problem>, retryAfter?: number, requestId?: string) {
    const code = problem.code ?? `http_${status}`;
    super(`${status} ${code}: ${problem.detail ?? problem.title ?? "error"}`);
    this.status = status;
    this.code = code;
    this.field = problem.field;
    this.problem = problem;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

export class BadRequestError extends APIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
}
export class IdempotencyConflictError extends ConflictError {
  override name = "IdempotencyConflictError";
}
export class SubjectErasedError extends ConflictError {
  override name = "SubjectErasedError";
}
export class PayloadTooLargeError extends APIError {
  override name = "PayloadTooLargeError";
}
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}
export class ServerError extends APIError {
  override name = "ServerError";
}
export class ServiceUnavailableError extends ServerError {
  override name = "ServiceUnavailableError";
}
export class ModelUnavailableError extends ServiceUnavailableError {
  override name = "ModelUnavailableError";
}

type ErrorClass = new (status: number, problem: Partial<Problem>, retryAfter?: number, requestId?: string) => APIError;

const BY_CODE: Record<string, ErrorClass> = {
  idempotency_conflict: IdempotencyConflictError,
  subject_erased: SubjectErasedError,
  model_unavailable: ModelUnavailableError,
};

const BY_STATUS: Record<number, ErrorClass> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  406: BadRequestError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: BadRequestError,
  429: RateLimitError,
  503: ServiceUnavailableError,
};

/** The typed error for an error answer; a body that is not a problem still gives one (its text as detail). */
export function errorFor(status: number, body: string, retryAfter?: number, requestId?: string): APIError {
  let problem: Partial<Problem> = {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) problem = parsed as Partial<Problem>;
  } catch {
    problem = { detail: body.trim().slice(0, 200) || undefined };
  }
  const cls =
    (problem.code && BY_CODE[problem.code]) || BY_STATUS[status] || (status >= 500 ? ServerError : APIError);
  return new cls(status, problem, retryAfter, requestId);
}
