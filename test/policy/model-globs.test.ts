import { describe, expect, it } from 'vitest';
import { firstMatchingGlob } from '../../src/config/model-globs.ts';

describe('firstMatchingGlob', () => {
  it.each([
    ['vendor@*', 'vendor@model', true],
    ['vendor@*', 'vendor@', true],
    ['vendor@*', 'other@model', false],
    ['*@turbo', 'vendor@turbo', true],
    ['*@turbo', 'vendor@turbo-2', false],
    ['*', 'any@thing', true],
    ['v*r@m*l', 'vendor@model', true],
    ['v*r@m*l', 'vendor@models', false],
    // `*` crosses the `@`.
    ['vend*del', 'vendor@model', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'ac', false],
    // A middle part may not overlap the suffix.
    ['ab*ba', 'aba', false],
    ['*x*x*', 'vendor@x', false],
    ['*x*x*', 'x@x', true],
    // Without `*`, a whole id: no prefix or substring match.
    ['vendor@model', 'vendor@model', true],
    ['vendor@model', 'vendor@model-2', false],
    ['vendor@model', 'my-vendor@model', false],
  ])('%s against %s: %s', (glob, modelId, matches) => {
    expect(firstMatchingGlob([glob], modelId)).toBe(matches ? glob : undefined);
  });

  it('answers the first glob of the list that matches', () => {
    const globs = ['a@x', 'b@*', '*@*'];
    expect(firstMatchingGlob(globs, 'b@y')).toBe('b@*');
    expect(firstMatchingGlob(globs, 'c@y')).toBe('*@*');
    expect(firstMatchingGlob([], 'c@y')).toBeUndefined();
  });

  it('treats regular expression characters literally', () => {
    expect(firstMatchingGlob(['v.n+r@m(1)'], 'v.n+r@m(1)')).toBe('v.n+r@m(1)');
    expect(firstMatchingGlob(['v.n*'], 'vendor@model')).toBeUndefined();
  });
});
