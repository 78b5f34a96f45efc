/** Exit codes of the `engram` CLI: 0 done, 1 the API answered an error, 2 the command was used wrongly. */
export const EXIT_OK = 0;
export const EXIT_API_ERROR = 1;
export const EXIT_USAGE = 2;

/** A mistake in how the command was called (bad flag, no key, a confirmation that cannot be asked): exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A check that ran and failed (an invalid certificate, a broken audit chain): exit 1 with `message`. */
export class CheckFailed extends Error {
  override name = 'CheckFailed';
}
