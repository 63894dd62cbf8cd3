import { readFileSync } from 'node:fs';

/**
 * CPU milliseconds (user + system) the calling thread has used, from /proc/thread-self/stat (Linux;
 * 10 ms ticks). 0 where there is no such file: the pipeline's counters then show no CPU, nothing
 * else depends on it.
 */
export function threadCpuMs(): number {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'latin1');
    // Fields after the parenthesised command name: utime is field 14, stime 15 (USER_HZ 100).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
