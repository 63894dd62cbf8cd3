/**
 * Series selection ranks by `last_value` in one pass keeping the best `max_series` (a metric may have
 * 100,000 series): the kept series and the tail must be exactly those of a full sort.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectSeries } from '../../src/rollup/aggregation/series-selection.js';
import type { MetricSeriesRecord } from '../../src/rollup/metric-records.js';
import { MetricSeriesView } from '../../src/rollup/series-cache.js';
import { mulberry32 } from '../helpers/seeded-random.js';
import { seriesRecord } from './aggregation-fixtures.js';
import { WindowSeries } from '../../src/rollup/aggregation/window-series.js';
import { TOTAL_SERIES } from '../../src/rollup/rollup-types.js';

test('top max_series by last_value equal a full sort: ties by hash, series without a value last', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const random = mulberry32(seed);
    const records = new Map<string, MetricSeriesRecord>();
    const withData = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const hash = Math.floor(random() * 1e12)
        .toString(16)
        .padStart(12, '0');
      // Few distinct values (many ties), some series without one, some with data but unregistered.
      const r = random();
      if (r < 0.9)
        records.set(hash, seriesRecord(hash, { last_value: r < 0.2 ? null : Math.floor(random() * 20) - 5 }));
      if (random() < 0.8) withData.add(hash);
    }
    const registry = new MetricSeriesView(1, [...records.values()]);
    const value = (h: string) => registry.get(h)?.last_value ?? -Infinity;
    const sorted = [...withData].sort((a, b) => value(b) - value(a) || (a < b ? -1 : a > b ? 1 : 0));
    for (const maxSeries of [1, 10, 50]) {
      const s = selectSeries({
        metricName: 'm',
        grouped: true,
        registry,
        withData,
        totalHasData: true,
        filter: null,
        maxSeries,
      });
      assert.deepEqual(
        s.kept.map((d) => d.hash),
        sorted.slice(0, maxSeries),
        `seed ${seed}, max_series ${maxSeries}`,
      );
      assert.deepEqual(s.tail, sorted.slice(maxSeries).sort());
      assert.equal(s.seriesTotal, withData.size);
      // A scan that lists the series in order gives the same answer (its tail is not sorted again).
      const inOrder = selectSeries({
        metricName: 'm',
        grouped: true,
        registry,
        withData: new Set([...withData].sort()),
        totalHasData: true,
        filter: null,
        maxSeries,
      });
      assert.deepEqual(inOrder, s);
    }
  }
});

test('ranking walks the registry’s ranked order, kept current as values change and series arrive; a joined window scan is the union', () => {
  const random = mulberry32(7);
  const hash = () =>
    Math.floor(random() * 1e12)
      .toString(16)
      .padStart(12, '0');
  const registry = new MetricSeriesView(1, []);
  const hashes: string[] = [];
  for (let i = 0; i < 3_000; i++) {
    const h = hash();
    hashes.push(h);
    registry.put(seriesRecord(h, { last_value: Math.floor(random() * 1_000) }));
  }
  for (let round = 0; round < 6; round++) {
    // The sealed part's scan (kept between answers) and the few series of the minutes after it.
    const head = hashes.filter(() => random() < 0.7);
    const rest = [...hashes.filter(() => random() < 0.05), TOTAL_SERIES];
    const union = new Set([...head, ...rest].filter((h) => h !== TOTAL_SERIES));
    const joined = WindowSeries.joined(head, rest);
    assert.equal(joined.size, union.size);
    assert.equal(joined.total, true);
    assert.deepEqual(new Set(joined), union);
    const value = (h: string) => registry.get(h)?.last_value ?? -Infinity;
    const sorted = [...union].sort((a, b) => value(b) - value(a) || (a < b ? -1 : a > b ? 1 : 0));
    for (const maxSeries of [1, 10, 50]) {
      const s = selectSeries({
        metricName: 'm',
        grouped: true,
        registry,
        withData: joined,
        totalHasData: true,
        filter: null,
        maxSeries,
      });
      assert.deepEqual(
        s.kept.map((d) => d.hash),
        sorted.slice(0, maxSeries),
        `round ${round}, max_series ${maxSeries}`,
      );
      assert.equal(s.folds, union.size > maxSeries);
      assert.deepEqual(s.tail, sorted.slice(maxSeries).sort());
    }
    // Values move (a series of the tail may overtake the top) and new series arrive.
    for (let i = 0; i < 200; i++) {
      const h = hashes[Math.floor(random() * hashes.length)]!;
      registry.put({ ...registry.get(h)!, last_value: Math.floor(random() * 2_000) });
    }
    for (let i = 0; i < 20; i++) {
      const h = hash();
      hashes.push(h);
      registry.put(seriesRecord(h, { last_value: 1_000 + Math.floor(random() * 1_000) }));
    }
  }
});
