// Connections on which gengate refused a message as broken, ambiguous or too slow: nothing after that
// message is served (docs/security.md, "At the HTTP edge"), whichever part refused it
// (src/gateway/request-head.ts for a head it refuses, src/errors/client-error.ts for what Node's parser or
// its timeout refuses). Keyed by the socket, so a connection's entry goes with it.
const refusedConnections = new WeakSet<object>();

export function refuseConnection(socket: object): void {
  refusedConnections.add(socket);
}

export function isRefusedConnection(socket: object): boolean {
  return refusedConnections.has(socket);
}

// Responses to requests that arrived on a connection after it was refused: never sent, so nothing waits
// for them to finish.
const responsesLeftUnanswered = new WeakSet<object>();

export function leaveUnanswered(response: object): void {
  responsesLeftUnanswered.add(response);
}

export function isLeftUnanswered(response: object): boolean {
  return responsesLeftUnanswered.has(response);
}

// Responses whose request Node's parser or its timeout refused midway (src/errors/client-error.ts): that
// answer went out on the raw connection instead, with this status.
const rawAnswerStatuses = new WeakMap<object, number>();

export function answeredRaw(response: object, status: number): void {
  rawAnswerStatuses.set(response, status);
}

export function rawAnswerStatus(response: object): number | undefined {
  return rawAnswerStatuses.get(response);
}
