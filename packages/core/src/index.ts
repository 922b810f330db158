/**
 * hookgate core: process each webhook event exactly once, although providers deliver at
 * least once. Pure logic over a {@link ClaimStore}; no I/O of its own.
 *
 * @packageDocumentation
 * @module @hookgate/core
 */

export { ABORTED, type Admission, type Answer, TOO_LARGE } from './answers.js';
export {
  type SqsBatchResponse,
  type SqsRecordLike,
  sqsBatchResponse,
} from './batch.js';
export {
  admit,
  type BindingOptions,
  bindingOptions,
  bodyConsumed,
  type ResolvedBindingOptions,
  settleFromResponse,
  type Verify,
} from './binding.js';
export { canonicalJson } from './canonical-json.js';
export type { Claim } from './claim.js';
export { Deadlines, type PendingOperation } from './deadlines.js';
export { forwardDecisions } from './decisions.js';
export {
  alreadyDone,
  createError,
  ErrorCode,
  foreignValueError,
  HookgateError,
  InvalidDeliveryError,
  type InvalidReason,
  LeaseLostError,
  optionError,
  StoreUnavailableError,
  storeError,
} from './errors.js';
export {
  type BatchOptions,
  createGate,
  type Gate,
  type GateOptions,
  type Handler,
  type HeartbeatOptions,
  type SequenceOptions,
} from './gate.js';
export type { EventTarget, Inspection } from './inspect.js';
export { type DerivedKey, deriveKey, type KeyOptions } from './key.js';
export { definePreset, type Preset, providers } from './providers.js';
export { parseRecord } from './record.js';
export {
  type AdvanceRequest,
  type AdvanceState,
  answered,
  answerOf,
  type ClaimConflict,
  type ClaimState,
  type ClaimStore,
  type StoredRecord,
} from './store.js';
export { parseTimestamp } from './time.js';
export type {
  BatchResult,
  Decision,
  DecisionEvent,
  Delivery,
  EventLease,
  HeaderBag,
  KeySource,
  Outcome,
  Selector,
  WebhookEvent,
} from './types.js';
export {
  type Verifier,
  type VerifierOptions,
  type VerifierSecret,
  verifiers,
} from './verifiers.js';
