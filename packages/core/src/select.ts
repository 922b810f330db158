import { InvalidDeliveryError, type InvalidReason, invalidOption, messageOf } from './errors.js';
import type { Delivery, HeaderBag, Selector } from './types.js';

/** A selector compiled once, when the gate is built. `payload` is the parsed payload. */
export type CompiledSelector = (payload: unknown, delivery: Delivery) => unknown;

const hasOwn = Object.hasOwn;

/** Compile a selector option; `option` names it in the error if it is malformed. */
export function compileSelector(selector: Selector, option: string): CompiledSelector {
  if (typeof selector === 'function') {
    // A selector is user code run on untrusted input: its failure is the delivery's fault.
    const reason: InvalidReason = option.startsWith('eventId')
      ? 'missing-id'
      : option === 'subject'
        ? 'missing-subject'
        : 'bad-timestamp';
    return (_payload, delivery) => {
      try {
        return selector(delivery);
      } catch (error) {
        throw new InvalidDeliveryError(reason, `${option} selector threw: ${messageOf(error)}`, {
          cause: error,
        });
      }
    };
  }
  if (typeof selector === 'string') {
    const path = selector.split('.');
    if (path.some((segment) => segment === '')) {
      invalidOption(option, `has an empty segment in payload path "${selector}"`);
    }
    if (path.length === 1) {
      const [name] = path as [string];
      return (payload) => member(payload, name);
    }
    return (payload) => {
      let value = payload;
      for (const segment of path) {
        value = member(value, segment);
        if (value === undefined) return undefined;
      }
      return value;
    };
  }
  if (typeof selector === 'object' && selector !== null && typeof selector.header === 'string') {
    const name = selector.header.trim().toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) {
      invalidOption(option, `names an invalid header "${selector.header}"`);
    }
    return (_payload, delivery) => readHeader(delivery.headers, name);
  }
  return invalidOption(
    option,
    'must be a payload path string, { header: name } or a function (delivery) => value',
  );
}

/** An own property of an object or array; never walks the prototype chain (`__proto__`, …). */
function member(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null || !hasOwn(value, name)) return undefined;
  return (value as Record<string, unknown>)[name];
}

/** The first value of a header, matched case-insensitively. `name` is lower case. */
export function readHeader(headers: HeaderBag | undefined, name: string): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (typeof (headers as Headers).get === 'function')
    return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  let value = hasOwn(bag, name) ? bag[name] : undefined;
  if (value === undefined) {
    for (const key of Object.keys(bag)) {
      if (key.length === name.length && key.toLowerCase() === name) {
        value = bag[key];
        break;
      }
    }
  }
  if (Array.isArray(value)) value = value[0];
  return typeof value === 'string' ? value : undefined;
}
