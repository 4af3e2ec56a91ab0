export * from "./client.js";
export * from "./errors.js";
export { Transport, retryAfterSeconds, type ApiRequest, type RetryOptions } from "./http.js";
export type { components, paths } from "./schema.js";
