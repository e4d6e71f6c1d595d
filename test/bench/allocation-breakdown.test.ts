// `node bench/profile.ts --allocations` ranks a sampling heap profile three ways; docs/performance.md
// (where the bytes go) quotes the third, which charges every byte to the innermost gengate function on
// its stack, through whatever dependency or Node internals allocated it.
import { expect, test } from 'vitest';
import { allocationBreakdown, type SamplingNode } from '../../bench/allocation.ts';

const frame = (functionName: string, url: string, selfSize: number, children: SamplingNode[] = []) => ({
  callFrame: { functionName, url, lineNumber: 9 },
  selfSize,
  children,
});

test('bytes by origin, by allocating function, and by the gengate function that asked for them', () => {
  const tree = frame('(root)', '', 0, [
    frame('parserOnIncoming', 'node:_http_server', 100, [
      frame('observeRequest', 'file:///app/dist/gateway/request-observer.js', 10, [
        frame('LOG', 'file:///app/node_modules/pino/lib/tools.js', 300, [
          frame('write', 'file:///app/node_modules/sonic-boom/index.js', 50),
        ]),
      ]),
    ]),
    frame('endTurn', 'file:///app/dist/store/redis/send-per-turn.js', 0, [
      frame('toWritable', 'file:///app/node_modules/ioredis/built/Command.js', 200),
    ]),
  ]);
  const { byOrigin, byFunction, byCaller } = allocationBreakdown(tree);
  expect(Object.fromEntries(byOrigin)).toEqual({
    'node internals': 100,
    'src/gateway': 10,
    pino: 300,
    'sonic-boom': 50,
    ioredis: 200,
  });
  expect(byFunction.get('LOG pino/lib/tools.js:10')).toBe(300);
  expect(Object.fromEntries(byCaller)).toEqual({
    '(no src/ frame)': 100,
    'observeRequest dist/gateway/request-observer.js:10': 360,
    'endTurn dist/store/redis/send-per-turn.js:10': 200,
  });
});
