// Whether this replica should receive traffic (GET /readyz): not while starting or draining, not while
// the store is down when the configuration says to fail closed, and not while it sheds load.
export type ReadinessState = 'starting' | 'ready' | 'draining' | 'store_unavailable' | 'overloaded';

export interface Readiness {
  readonly state: ReadinessState;
  markReady(): void;
  markDraining(): void;
}

export interface ReadinessOptions {
  /** Given only in fail-closed mode, where a replica without its store can serve nothing. */
  storeAvailable?: () => boolean;
  /** Whether the gateway sheds new requests (src/overload/shed-load.ts). */
  overloaded?: () => boolean;
}

export function createReadiness(options: ReadinessOptions = {}): Readiness {
  let phase: 'starting' | 'ready' | 'draining' = 'starting';
  return {
    get state() {
      if (phase !== 'ready') return phase;
      if (options.storeAvailable?.() === false) return 'store_unavailable';
      return options.overloaded?.() === true ? 'overloaded' : phase;
    },
    markReady() {
      if (phase === 'starting') phase = 'ready';
    },
    markDraining() {
      phase = 'draining';
    },
  };
}
