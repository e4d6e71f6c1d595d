// Runs the simulator on a real port, for the demo, the CLI and tests that need a URL.
import type { AddressInfo } from 'node:net';
import { createSimulator, type Simulator, type SimulatorOptions } from './app.ts';

export interface SimulatorServer extends Simulator {
  /** `http://host:port`, usable by clients on this machine. */
  url: string;
  close(): Promise<void>;
}

// A wildcard address listens everywhere but cannot be dialled; clients on this machine use loopback.
const DIALLABLE_HOST: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' };

function urlOf(address: AddressInfo): string {
  const host = DIALLABLE_HOST[address.address] ?? address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

export async function startSimulator(
  options: SimulatorOptions & { host: string; port: number },
): Promise<SimulatorServer> {
  const simulator = createSimulator(options);
  await simulator.app.listen({ host: options.host, port: options.port });
  return {
    ...simulator,
    url: urlOf(simulator.app.server.address() as AddressInfo),
    close: () => simulator.app.close(),
  };
}
