// A server that cannot take its address (a second copy already runs, a privileged port, an address this
// host does not have) is told to the operator in one line naming the address and the setting to change,
// and the process exits with EXIT_CANNOT_LISTEN, rather than with a stack trace. A host that is neither
// an address nor a name that resolves never reaches the socket: the lookup before it fails.

const REASONS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available on this host',
};

export interface ListenAddress {
  host: string;
  port: number;
}

function hostAndPort({ host, port }: ListenAddress): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The line that explains `error` as a failure to listen, or undefined when it is some other error. */
export function cannotListenMessage(
  error: unknown,
  address: ListenAddress,
  setting: string,
): string | undefined {
  const reason = REASONS[(error as NodeJS.ErrnoException | undefined)?.code ?? ''];
  return reason === undefined
    ? undefined
    : `cannot listen on ${hostAndPort(address)} (${setting}): ${reason}`;
}

/**
 * Why the host to listen on could not be looked up (`999.1.1.1`, a misspelt name), or undefined when
 * `error` is not a failed lookup.
 */
export function unresolvableHostReason(error: unknown): string | undefined {
  const { syscall, code } = (error ?? {}) as NodeJS.ErrnoException;
  return syscall === 'getaddrinfo'
    ? `not an IP address, nor a name that resolves (${code ?? 'lookup failed'})`
    : undefined;
}
