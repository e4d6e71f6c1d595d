// Metering reads a polled record's id, totalCost and completedAt without parsing the record (whose
// results can be megabytes of base64): the same members JSON.parse would give, at any size.
import { describe, expect, test } from 'vitest';
import { readRecordSummary } from '../../src/usage/record-summary.ts';

const summaryOf = (text: string) => readRecordSummary(Buffer.from(text));

describe('the record summary', () => {
  test('a finished image record with base64 results', () => {
    const base64 = 'iVBORw0KGgo'.repeat(400_000);
    const record = {
      data: {
        id: '3f0c8a52-6b1d-4e2a-9c47-5d8e1f2a7b90',
        status: 'queued',
        request: { input: { positivePrompt: '"totalCost": 99, "id": "x"' }, seed: 1 },
        results: [
          { cost: 0.01, isNSFW: false, base64 },
          { cost: 0.01, base64: `${base64}\\"` },
        ],
        completedAt: '2026-11-23T10:00:00Z',
        totalCost: 0.02,
      },
    };
    expect(summaryOf(JSON.stringify(record))).toEqual({
      id: record.data.id,
      status: 'queued',
      completedAt: '2026-11-23T10:00:00Z',
      totalCost: 0.02,
    });
  });

  test.each([
    [
      'members in any order, with spaces',
      '{ "data" : { "totalCost" : 1.5e-1 , "completedAt":"t", "id" : "a" } }',
      { id: 'a', completedAt: 't', totalCost: 0.15 },
    ],
    [
      'escaped names and values',
      '{"data":{"\\u0069d":"a\\u0062","completedAt":"t","totalCost":2}}',
      { id: 'ab', completedAt: 't', totalCost: 2 },
    ],
    [
      'an unfinished record',
      '{"data":{"id":"a","completedAt":null,"totalCost":0}}',
      { id: 'a', totalCost: 0 },
    ],
    [
      "members of the same names deeper are not the record's",
      '{"data":{"results":[{"id":"r","totalCost":9}],"x":{"completedAt":"t"}},"id":"top"}',
      {},
    ],
    ['a record of another type', '{"data":{"id":7,"totalCost":"1","completedAt":true}}', {}],
    ['no data', '{"status":200}', {}],
    ['data that is not an object', '{"data":[{"id":"a"}]}', {}],
  ])('%s', (_name, text, expected) => {
    expect(summaryOf(text)).toEqual(expected);
  });
});
