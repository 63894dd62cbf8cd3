import { metricsConsumer } from '../rollup/metric-consumer.js';
import type { MetricsViewTask, ViewMetricsOutput } from '../rollup/metric-stage.js';
import type { OutputConsumer } from './output-consumer.js';

/**
 * Every consumer of view output, declared once (pipeline/output-consumer.ts): the worker runs them
 * and the server wires their tasks and commit participants from this list, in this order. Drains and
 * exports join here.
 */
export const OUTPUT_CONSUMERS: readonly OutputConsumer[] = [
  metricsConsumer satisfies OutputConsumer<MetricsViewTask, ViewMetricsOutput> as OutputConsumer,
];
