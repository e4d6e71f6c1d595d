// Whether this replica should receive traffic (GET /readyz): not while starting or draining, and not
// while the store is down when the configuration says to fail closed.
export type ReadinessState = 'starting' | 'ready' | 'draining' | 'store_unavailable';

export interface Readiness {
  readonly state: ReadinessState;
  markReady(): void;
  markDraining(): void;
}

export interface ReadinessOptions {
  /** Given only in fail-closed mode, where a replica without its store can serve nothing. */
  storeAvailable?: () => boolean;
}

export function createReadiness(options: ReadinessOptions = {}): Readiness {
  let phase: 'starting' | 'ready' | 'draining' = 'starting';
  return {
    get state() {
      if (phase === 'ready' && options.storeAvailable?.() === false) return 'store_unavailable';
      return phase;
    },
    markReady() {
      if (phase === 'starting') phase = 'ready';
    },
    markDraining() {
      phase = 'draining';
    },
  };
}
