// The proof's reading of Grafana JSON (./dashboard-queries.ts): a malformed dashboard is refused with
// every problem named, and variables become what Grafana's Prometheus data source would send.
import { describe, expect, it } from 'vitest';
import { VariableType } from '@grafana/grafana-foundation-sdk/dashboard';
import {
  allValueOf,
  dashboardShapeProblems,
  filterVariableValues,
  interpolate,
  labelValuesQuery,
  panelQueries,
  type Dashboard,
} from './dashboard-queries.ts';

const tenantVariable = { type: VariableType.Query, name: 'tenant' };

describe('dashboard JSON', () => {
  it('passes with the members the SDK requires, rows and their panels included', () => {
    const dashboard = {
      title: 'gengate',
      uid: 'gengate',
      schemaVersion: 41,
      annotations: {},
      templating: { list: [tenantVariable] },
      panels: [
        { type: 'stat', title: 'Rate', targets: [{ refId: 'A', expr: 'sum(rate(x[1m]))', instant: true }] },
        {
          type: 'row',
          title: 'More',
          id: 2,
          collapsed: true,
          panels: [{ type: 'timeseries', title: 'Inner', targets: [{ refId: 'A', expr: 'y' }] }],
        },
      ],
    };
    expect(dashboardShapeProblems(dashboard, 'ok.json')).toEqual([]);
    expect(panelQueries({ file: 'ok.json', dashboard: dashboard as unknown as Dashboard })).toEqual([
      { dashboard: 'ok.json', panel: 'Rate', refId: 'A', expr: 'sum(rate(x[1m]))', instant: true },
      { dashboard: 'ok.json', panel: 'Inner', refId: 'A', expr: 'y', instant: false },
    ]);
  });

  it('names every departure at once', () => {
    const dashboard = {
      title: 'gengate',
      templating: { list: [{ type: 'query' }] },
      panels: [
        { type: 'row', title: 'Collapsed', panels: [{ title: 'No type' }] },
        { type: 'timeseries', title: 'Rate', targets: [{ refId: 'A', query: 'x' }] },
      ],
    };
    expect(dashboardShapeProblems(dashboard, 'bad.json')).toEqual([
      'bad.json: uid is not a string',
      'bad.json: schemaVersion (required) is not a number',
      'bad.json: annotations (required) is not an object',
      'bad.json: a variable has no name',
      'bad.json: row panel "Collapsed": collapsed (required) is not a boolean',
      'bad.json: row panel "Collapsed": id (required) is not a number',
      'bad.json: panel 0, its panel 0 has no type',
      'bad.json: panel "Rate": a target has no expr',
    ]);
  });
});

describe('variables as Grafana substitutes them', () => {
  it('reads label_values queries, with or without a selector, as a string or a query object', () => {
    expect(labelValuesQuery({ ...tenantVariable, query: 'label_values(tenant)' })).toEqual({
      label: 'tenant',
    });
    expect(
      labelValuesQuery({ ...tenantVariable, query: { query: 'label_values(up{job="g"}, instance)' } }),
    ).toEqual({ label: 'instance', match: 'up{job="g"}' });
  });

  it('keeps the values the regex matches, by their first capture group when there is one', () => {
    const values = ['none', 'studio', 'lab'];
    expect(filterVariableValues({ ...tenantVariable, regex: '/^(?!none$).*/' }, values)).toEqual([
      'studio',
      'lab',
    ]);
    expect(filterVariableValues({ ...tenantVariable, regex: '/^s(.*)$/' }, values)).toEqual(['tudio']);
    expect(filterVariableValues(tenantVariable, values)).toEqual(values);
  });

  it('puts allValue for "All", or every value escaped as one alternation', () => {
    expect(allValueOf({ ...tenantVariable, allValue: '.*' }, ['a', 'b'])).toBe('.*');
    expect(allValueOf(tenantVariable, ['images.create', 'images.get'])).toBe(
      '(images\\\\.create|images\\\\.get)',
    );
    expect(allValueOf(tenantVariable, ['studio'])).toBe('studio');
  });

  it('replaces every syntax of a variable, and refuses an unknown one', () => {
    const values = new Map([
      ['tenant', '.*'],
      ['__rate_interval', '4s'],
    ]);
    expect(interpolate('rate(x{tenant=~"$tenant"}[$__rate_interval])', values)).toBe(
      'rate(x{tenant=~".*"}[4s])',
    );
    expect(interpolate('x{a=~"${tenant}", b=~"${tenant:regex}", c=~"[[tenant]]"}', values)).toBe(
      'x{a=~".*", b=~".*", c=~".*"}',
    );
    expect(() => interpolate('x{route=~"$route"}', values)).toThrow(
      'no value for $route in x{route=~"$route"}',
    );
  });
});
