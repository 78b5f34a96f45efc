import type { APIPromise } from './api-promise.js';

/** The page fields every list of the API answers (docs/architecture.md#pages-and-totals). */
interface PageFields {
  has_more?: boolean;
  total?: number;
  total_count?: number;
  limit?: number;
  offset?: number;
}

export type PageQuery = { limit?: number; offset?: number | null };

/**
 * A list call: iterate it for every item across pages (`for await (const m of list)`), `pages()`
 * for whole pages, or `page()` for the one page the query names. The next page starts where the
 * last one ended (limit/offset); iteration stops at `has_more: false`, at the total, or at an
 * empty page.
 */
export class Paginated<Page extends object, Item> implements AsyncIterable<Item> {
  constructor(
    private readonly fetchPage: (offset: number | undefined) => APIPromise<Page>,
    private readonly itemsOf: (page: Page) => readonly Item[],
    private readonly startOffset: number | undefined,
  ) {}

  /** The page the query names (its `offset`, or the first); `.page().withResponse()` adds the raw answer. */
  page(): APIPromise<Page> {
    return this.fetchPage(this.startOffset);
  }

  /** Every page in turn, from the query's offset to the end. */
  async *pages(): AsyncGenerator<Page, void, undefined> {
    let offset = this.startOffset;
    for (;;) {
      const page = await this.fetchPage(offset);
      yield page;
      const items = this.itemsOf(page);
      const fields = page as PageFields;
      const next = (fields.offset ?? offset ?? 0) + items.length;
      const total = fields.total ?? fields.total_count;
      if (items.length === 0 || fields.has_more === false || (fields.has_more === undefined && total !== undefined && next >= total)) return;
      offset = next;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Item> {
    for await (const page of this.pages()) yield* this.itemsOf(page);
  }

  /** Every item, collected (mind large lists). */
  async toArray(): Promise<Item[]> {
    const all: Item[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}
