/** What `.withResponse()` answers: the parsed result beside the raw answer. */
export interface WithResponse<T> {
  data: T;
  /** The raw answer (its body already read into `data`): headers such as `RateLimit`, `Server-Timing`. */
  response: Response;
  /** `X-Request-Id` of the answer: quote it when asking the operator. */
  requestId: string | null;
}

/**
 * What every call answers: a Promise of the parsed result that also gives the raw answer, as
 * openai-node's does. `await call` is the result; `call.withResponse()` is `{ data, response,
 * requestId }`; `call.asResponse()` is the unread `Response` (the body is then the caller's).
 * The request goes out at once, whichever is used.
 */
export class APIPromise<T> extends Promise<T> {
  #parsed: Promise<T> | undefined;
  readonly #response: Promise<Response>;
  readonly #parse: (res: Response) => Promise<T>;

  constructor(response: Promise<Response>, parse: (res: Response) => Promise<T>) {
    super((resolve) => resolve(null as T));
    this.#response = response;
    this.#parse = parse;
    // A call nobody awaits must not end the process with an unhandled rejection; awaiting still throws.
    response.catch(() => undefined);
  }

  // `then` of a subclass builds the next promise with the species: a plain Promise, not an APIPromise.
  static override get [Symbol.species]() {
    return Promise;
  }

  /** The unread answer; its body is the caller's to read. */
  asResponse(): Promise<Response> {
    return this.#response;
  }

  /** The parsed result with the raw answer and its request id. */
  async withResponse(): Promise<WithResponse<T>> {
    const [data, response] = await Promise.all([this.#result(), this.#response]);
    return { data, response, requestId: response.headers.get('x-request-id') };
  }

  #result(): Promise<T> {
    this.#parsed ??= this.#response.then(this.#parse);
    return this.#parsed;
  }

  // biome-ignore lint/suspicious/noThenProperty: an APIPromise is a Promise; `then` sends the parsed result.
  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#result().then(onfulfilled, onrejected);
  }

  override catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<T | R> {
    return this.#result().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.#result().finally(onfinally);
  }
}
