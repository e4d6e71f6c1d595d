import { describe, expect, it } from 'vitest';
import { formatPolicyHeader } from '../../src/policy/header.ts';

describe('formatPolicyHeader', () => {
  it('lists each change as field=action;from=...;to=..., separated by commas', () => {
    expect(
      formatPolicyHeader([
        { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low', to: 'high' },
        { rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 },
      ]),
    ).toBe('safetyLevel=raised;from=low;to=high, samples=clamped;from=8;to=4');
  });

  it('leaves out from when the request sent no value', () => {
    expect(
      formatPolicyHeader([
        { rule: 'safetyLevel', field: 'safetyLevel', action: 'set', from: undefined, to: 'medium' },
        { rule: 'scanResults', field: 'scanResults', action: 'set', from: false, to: true },
      ]),
    ).toBe('safetyLevel=set;to=medium, scanResults=set;from=false;to=true');
  });

  it('leaves out a value a header could not carry safely', () => {
    expect(
      formatPolicyHeader([
        { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low\r\nx: y', to: 'high' },
      ]),
    ).toBe('safetyLevel=raised;to=high');
  });
});
