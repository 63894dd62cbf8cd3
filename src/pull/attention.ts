import type { AttentionItem, AttentionProvider } from '../attention/types.js';
import type { FetchJobRepo } from './fetch-job-repo.js';
import type { CheckRecord, PullRecord } from './records.js';

/**
 * `check_down` (tier `firing`): an active check whose last run settled down; `count` is the
 * failures in a row, `since` the first of them, `detail` the last error. It ends with the next up run.
 */
export function checkDownProvider(checks: FetchJobRepo<CheckRecord>): AttentionProvider {
  return {
    name: 'checks',
    items(projectId: string): AttentionItem[] {
      return checks
        .list(projectId)
        .filter((c) => c.status === 'active' && c.last_up === false && c.consecutive_failure_count > 0)
        .map((c) => ({
          type: 'check_down',
          tier: 'firing',
          resource_id: c.id,
          resource_name: c.name,
          count: c.consecutive_failure_count,
          since: c.failing_since,
          ended_at: null,
          detail: c.last_error,
        }));
    },
  };
}

/**
 * `pull_suspended` (tier `suspended`): a pull the service disabled after its failure streak; `count`
 * is the streak, `since` when it was disabled, `detail` the last error. Resume ends it.
 */
export function pullSuspendedProvider(pulls: FetchJobRepo<PullRecord>): AttentionProvider {
  return {
    name: 'pulls',
    items(projectId: string): AttentionItem[] {
      return pulls
        .list(projectId)
        .filter((p) => p.status === 'disabled')
        .map((p) => ({
          type: 'pull_suspended',
          tier: 'suspended',
          resource_id: p.id,
          resource_name: p.name,
          count: p.consecutive_failure_count,
          since: p.disabled_at,
          ended_at: null,
          detail: p.last_error,
        }));
    },
  };
}
