// Whether this replica should receive traffic (GET /readyz): not while starting or draining.
export type ReadinessState = 'starting' | 'ready' | 'draining';

export interface Readiness {
  readonly state: ReadinessState;
  markReady(): void;
  markDraining(): void;
}

export function createReadiness(): Readiness {
  let state: ReadinessState = 'starting';
  return {
    get state() {
      return state;
    },
    markReady() {
      if (state === 'starting') state = 'ready';
    },
    markDraining() {
      state = 'draining';
    },
  };
}
