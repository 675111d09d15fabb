/**
 * Preloaded (`--import`) into a bench child by test/cli/bench-children.test.ts: `process.cpuUsage` reports any stretch
 * (a reading since an earlier one) as 1.5 s user and 0.5 s system, so the child's CPU answer is known in advance.
 */
const cpuUsage = process.cpuUsage.bind(process);
process.cpuUsage = (previous?: NodeJS.CpuUsage) => (previous === undefined ? cpuUsage() : { user: 1_500_000, system: 500_000 });
