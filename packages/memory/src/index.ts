/**
 * An in-process {@link ClaimStore}: for tests, the demo and single-process services.
 *
 * @packageDocumentation
 * @module @hookgate/memory
 */
import {
  type AdvanceRequest,
  type AdvanceState,
  answered,
  type ClaimState,
  type ClaimStore,
  createError,
  foreignValueError,
  optionError,
  parseRecord,
  type StoredRecord,
} from '@hookgate/core';
import {
  claimRecord,
  fingerprintOf,
  held,
  ownedBy,
  parseWatermark,
  recordKind,
} from './records.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most records (claims and watermarks) held at once. When it is reached and no record has
   * expired, a new record (a claim, a done after its claim expired, a watermark) fails closed
   * with `StoreUnavailableError` (the gate answers 503 and the provider retries later) instead
   * of evicting a record, which could let a duplicate through.
   * @default 100_000
   */
  maxEntries?: number;
  /** The clock, in epoch milliseconds; inject one to test TTLs without waiting. @default Date.now */
  now?: () => number;
}

/** The `expiresAt` of a deleted entry. */
const DROPPED = -1;

// Answers the gate reads at once (see `answered`): made once, since a resolved promise cannot
// change.
const TRUE = answered(true);
const FALSE = answered(false);
const CLAIM_STATES = {
  acquired: answered<ClaimState>('acquired'),
  processing: answered<ClaimState>('processing'),
  done: answered<ClaimState>('done'),
};
const ADVANCE_STATES = {
  applied: answered<AdvanceState>('applied'),
  stale: answered<AdvanceState>('stale'),
  held: answered<AdvanceState>('held'),
};

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * A {@link ClaimStore} in a `Map`, with the same semantics as the Redis adapters: TTLs are
 * honoured and expired records reclaimed, so memory stays bounded by `maxEntries`.
 *
 * It lives in one process: two processes (or a restart) do not share it. Use a Redis store when
 * more than one process receives webhooks, or when a restart must not forget done events.
 */
export class MemoryStore implements ClaimStore {
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** No record expires before this: a lower bound, kept so that a full store fails fast. */
  #nextExpiry = Number.POSITIVE_INFINITY;
  #cursor: Iterator<[string, Entry]> | undefined;
  /** The live record the reclaim cursor waits at, and the one after it. */
  #held: [string, Entry] | undefined;
  #after: [string, Entry] | undefined;
  /** The record inserted last, and its key (an entry dropped since is marked `DROPPED`). */
  #recentKey: string | undefined;
  #recent: Entry | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    const { maxEntries = 100_000, now = Date.now } = options;
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
      throw optionError('MemoryStore', 'maxEntries', 'must be a positive integer');
    }
    if (typeof now !== 'function') {
      throw optionError('MemoryStore', 'now', 'must be a function');
    }
    this.#maxEntries = maxEntries;
    this.#now = now;
  }

  /** Live and not yet reclaimed records. */
  get size(): number {
    return this.#entries.size;
  }

  // The ClaimStore methods. Each answers at once, with a promise as the contract asks, made by
  // `answered` so that the gate reads it without waiting a turn; an answer the store gives
  // often is one promise made once, and a throw is a rejection. An `async` method cost an
  // allocation or two per call more.

  claim(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<ClaimState> {
    try {
      const state = this.#claim(key, token, ttlMs, fingerprint);
      return typeof state === 'string' ? CLAIM_STATES[state] : answered(state);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  done(key: string, token: string, ttlMs: number, fingerprint?: string): Promise<boolean> {
    try {
      return this.#done(key, token, ttlMs, fingerprint) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  release(key: string, token: string): Promise<boolean> {
    try {
      return this.#release(key, token) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  extend(key: string, token: string, ttlMs: number): Promise<boolean> {
    try {
      return this.#extend(key, token, ttlMs) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  advance(key: string, request: AdvanceRequest): Promise<AdvanceState> {
    try {
      return ADVANCE_STATES[this.#advance(key, request)];
    } catch (error) {
      return Promise.reject(error);
    }
  }

  releaseHold(key: string, token: string): Promise<boolean> {
    try {
      return this.#releaseHold(key, token) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  extendHold(key: string, token: string, ttlMs: number): Promise<boolean> {
    try {
      return this.#extendHold(key, token, ttlMs) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  inspect(key: string): Promise<StoredRecord> {
    try {
      return Promise.resolve(this.#inspect(key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  forget(key: string): Promise<boolean> {
    try {
      return this.#forget(key) ? TRUE : FALSE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #claim(key: string, token: string, ttlMs: number, fingerprint?: string): ClaimState {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) {
      this.#insert(key, claimRecord('p:', token, fingerprint), now + ttlMs, now);
      return 'acquired';
    }
    const { value } = entry;
    const kind = recordKind(value);
    if (kind === undefined) throw foreignValueError('MemoryStore', 'claim', key);
    if (fingerprint !== undefined) {
      const stored = fingerprintOf(value);
      if (stored !== undefined && stored !== fingerprint) {
        return { state: 'conflict', fingerprint: stored };
      }
    }
    if (kind === 'd') return 'done';
    return ownedBy(value, token) ? 'acquired' : 'processing'; // re-sent: acquired, per the contract
  }

  #done(key: string, token: string, ttlMs: number, fingerprint?: string): boolean {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) {
      // The claim expired while nobody else took the key: the work happened, record it.
      this.#insert(key, claimRecord('d:', token, fingerprint), now + ttlMs, now);
      return true;
    }
    if (recordKind(entry.value) === undefined) throw foreignValueError('MemoryStore', 'done', key);
    // `p:<token>…` or a done record of the same token (done again by its owner); the record
    // keeps its fingerprint.
    if (!ownedBy(entry.value, token)) return false;
    entry.value = claimRecord('d:', token, fingerprint ?? fingerprintOf(entry.value));
    this.#expire(entry, now + ttlMs);
    return true;
  }

  #release(key: string, token: string): boolean {
    const entry = this.#live(key, this.#now());
    if (entry === undefined) return true;
    const kind = recordKind(entry.value);
    if (kind === undefined) throw foreignValueError('MemoryStore', 'release', key);
    if (kind !== 'p' || !ownedBy(entry.value, token)) return false;
    this.#drop(key, entry);
    return true;
  }

  #extend(key: string, token: string, ttlMs: number): boolean {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) return false;
    const kind = recordKind(entry.value);
    if (kind === undefined) throw foreignValueError('MemoryStore', 'extend', key);
    if (kind !== 'p' || !ownedBy(entry.value, token)) return false;
    this.#expire(entry, now + ttlMs);
    return true;
  }

  #advance(key: string, request: AdvanceRequest): AdvanceState {
    const { at, eventKey, token, holdMs, ttlMs, ties } = request;
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry !== undefined) {
      const mark = parseWatermark(entry.value);
      if (mark === undefined) throw foreignValueError('MemoryStore', 'advance', key);
      if (at < mark.at) return 'stale';
      if (at === mark.at && ties === 'drop' && mark.eventKey !== eventKey) return 'stale';
      if (mark.holdUntil > now && mark.eventKey !== eventKey) return 'held';
    }
    const value = held(now + holdMs, token, at, eventKey);
    const expiresAt = now + Math.max(ttlMs, holdMs);
    if (entry === undefined) this.#insert(key, value, expiresAt, now);
    else {
      entry.value = value;
      this.#expire(entry, expiresAt);
    }
    return 'applied';
  }

  #releaseHold(key: string, token: string): boolean {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) return true;
    const mark = parseWatermark(entry.value);
    if (mark === undefined) throw foreignValueError('MemoryStore', 'releaseHold', key);
    if (mark.holder === token) entry.value = `${mark.at}:${mark.eventKey}`;
    else if (mark.holdUntil > now) return false;
    return true;
  }

  #extendHold(key: string, token: string, ttlMs: number): boolean {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) return false;
    const mark = parseWatermark(entry.value);
    if (mark === undefined) throw foreignValueError('MemoryStore', 'extendHold', key);
    if (mark.holder !== token) return false;
    entry.value = held(now + ttlMs, token, mark.at, mark.eventKey);
    if (entry.expiresAt < now + ttlMs) this.#expire(entry, now + ttlMs);
    return true;
  }

  #inspect(key: string): StoredRecord {
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) return { kind: 'absent' };
    const record = parseRecord(entry.value);
    if (record === undefined) throw foreignValueError('MemoryStore', 'inspect', key);
    return { ...record, ttlMs: entry.expiresAt - now };
  }

  #forget(key: string): boolean {
    const entry = this.#live(key, this.#now());
    if (entry === undefined) return false;
    if (parseRecord(entry.value) === undefined)
      throw foreignValueError('MemoryStore', 'forget', key);
    this.#drop(key, entry);
    return true;
  }

  /** Drop every expired record now (they are also reclaimed as the store is used). */
  sweep(): void {
    const now = this.#now();
    let next = Number.POSITIVE_INFINITY;
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt <= now) this.#drop(key, entry);
      else if (entry.expiresAt < next) next = entry.expiresAt;
    }
    this.#nextExpiry = next;
  }

  /** Drop every record. */
  clear(): void {
    this.#entries.clear();
    this.#cursor = this.#held = this.#after = this.#recent = this.#recentKey = undefined;
    this.#nextExpiry = Number.POSITIVE_INFINITY;
  }

  #live(key: string, now: number): Entry | undefined {
    // The record inserted last is the one a `done` most often looks for: no lookup for it.
    const recent = this.#recent;
    const entry =
      recent !== undefined && key === this.#recentKey && recent.expiresAt !== DROPPED
        ? recent
        : this.#entries.get(key);
    if (entry === undefined || entry.expiresAt > now) return entry;
    this.#drop(key, entry);
    return undefined;
  }

  /** Delete a record, marking its entry so that the reclaim cursor, if it holds it, lets go. */
  #drop(key: string, entry: Entry): void {
    this.#entries.delete(key);
    entry.expiresAt = DROPPED;
  }

  #insert(key: string, value: string, expiresAt: number, now: number): void {
    this.#reclaimSome(now);
    if (this.#entries.size >= this.#maxEntries) {
      if (now >= this.#nextExpiry) this.sweep();
      if (this.#entries.size >= this.#maxEntries) {
        throw createError(
          'MemoryStore',
          'STORE_UNAVAILABLE',
          `is full (maxEntries ${this.#maxEntries}) and no record has expired yet`,
        );
      }
    }
    const entry = { value, expiresAt };
    this.#entries.set(key, entry);
    this.#recentKey = key;
    this.#recent = entry;
    if (expiresAt < this.#nextExpiry) this.#nextExpiry = expiresAt;
  }

  #expire(entry: Entry, expiresAt: number): void {
    entry.expiresAt = expiresAt;
    if (expiresAt < this.#nextExpiry) this.#nextExpiry = expiresAt;
  }

  /**
   * Reclaim expired records as new ones come in. Records expire about in the order they were
   * added (one TTL per kind of record), so the cursor walks from the oldest, drops expired ones
   * (up to three per insert, so that it keeps up) and waits at the first live one. It passes a
   * live record only when the next one expires sooner (a long-lived watermark ahead of done
   * records). The round robin this replaces passed every live record, so that the dead ones
   * behind it waited for the next lap: a fifth of the map, then a full sweep.
   */
  #reclaimSome(now: number): void {
    let held = this.#held;
    let after = this.#after;
    // Kept from the last insert: either may have been deleted since, and its key claimed again.
    if (held?.[1].expiresAt === DROPPED) held = undefined;
    if (after?.[1].expiresAt === DROPPED) after = undefined;
    for (let looked = 0; looked < 3; looked++) {
      if (held === undefined) {
        held = after ?? this.#next();
        after = undefined;
        if (held === undefined) break;
      }
      if (held[1].expiresAt <= now) {
        this.#drop(held[0], held[1]);
        held = undefined;
        continue;
      }
      after ??= this.#next();
      if (after === undefined)
        held = undefined; // the newest record: start again from the oldest
      else if (after[1].expiresAt < held[1].expiresAt)
        held = undefined; // pass the long-lived one
      else break;
    }
    this.#held = held;
    this.#after = after;
  }

  #next(): [string, Entry] | undefined {
    this.#cursor ??= this.#entries.entries();
    const next = this.#cursor.next();
    if (!next.done) return next.value;
    this.#cursor = undefined;
    return undefined;
  }
}
