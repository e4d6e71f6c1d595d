// The store's round trips, as gengate_store_operation_duration_seconds and gengate_store_errors_total label
// them. Every part that talks to the shared store (rate limits, ownership, usage, admission) reports
// through an ObserveStore, so the store's timing is measured the same way whoever sends the command.

/** `admission`: a request id checked and the limits charged in one call (src/admission/redis-admission.ts). */
export const STORE_OPERATIONS = [
  'admission',
  'rate_limit_check',
  'ping',
  'ownership',
  'usage_flush',
  'usage_read',
] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** Where a store user reports each round trip: gengate_store_operation_duration_seconds and _errors_total. */
export type ObserveStore = (operation: StoreOperation, seconds: number, failed: boolean) => void;
