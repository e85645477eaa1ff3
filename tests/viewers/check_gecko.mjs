// The gecko export read by Mozilla's profiler-cli (@firefox-devtools/profiler-cli, the Firefox
// Profiler's own profile processing run from the command line). Asserts, against
// `perch report --json`: every thread's CPU time (from samples.threadCPUDelta) = its samples x
// the interval; the running samples of the busiest threads = the report's; Idle threads have
// no running samples (the Idle category) while all their samples are there with
// --include-idle; the OS line comes from meta.oscpu.
//   node check_gecko.mjs EXPORT.json REPORT.json [INTERVAL_NS]
import {execFileSync} from 'node:child_process';
import {createRequire} from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {Checks, readReport, reportThreads} from './lib.mjs';

const [file, reportFile, intervalArg] = process.argv.slice(2);
const intervalMs = Number(intervalArg || 1000000) / 1e6;
const checks = new Checks(`profiler-cli ${path.basename(file)}`);
const report = readReport(reportFile);
const require = createRequire(import.meta.url);
const cli = path.join(path.dirname(require.resolve('@firefox-devtools/profiler-cli/package.json')),
                      'dist/profiler-cli.js');
const sessions = fs.mkdtempSync(path.join(os.tmpdir(), 'perch-pq-'));
const env = {...process.env, PROFILER_CLI_SESSION_DIR: sessions};

function pq(args, json = true) {
  const out = execFileSync(process.execPath, [cli, ...args, ...(json ? ['--json'] : [])],
                           {env, encoding: 'utf8', timeout: 120000});
  return json ? JSON.parse(out) : out;
}

// profiler-cli waits 500 ms for its daemon to start; on a loaded machine that is too short,
// and it says so ("most likely still starting, and retrying often works"). The daemon goes on
// loading the profile, so wait for the session to answer instead of loading again.
function load() {
  try {
    pq(['load', path.resolve(file)], false);
    return;
  } catch (e) {
    if (!String(e.stderr).includes('still starting')) throw e;
  }
  for (let i = 0; i < 240; i++) {
    try {
      pq(['profile', 'info'], false);
      return;
    } catch {
      execFileSync('sleep', ['0.25']);
    }
  }
  throw new Error('profiler-cli: the daemon never answered');
}

try {
  load();
  const info = pq(['profile', 'info'], false);
  const platform = /Platform: (.*)/.exec(info);
  checks.ok(platform && platform[1].startsWith('Windows'), `OS line: ${platform && platform[1]}`);
  const threads = pq(['thread', 'list', '--limit', '0']).threads;
  const want = reportThreads(report);
  const keyOf = (t) => {
    const idle = /^Idle \(CPU (\d+)\)$/.exec(t.name);
    return idle ? `idle/${idle[1]}` : `${t.pid}/${t.tid}`;
  };
  const cpuThreads = threads.filter((t) => !t.name.includes('pmc source'));
  const cpuBad = [];
  for (const t of cpuThreads) {
    const r = want.get(keyOf(t));
    const expect = r && r.tid !== 0 ? r.samples * intervalMs : 0;
    if (Math.abs(t.cpuMs - expect) > 1e-6) cpuBad.push(`${t.name} ${t.cpuMs} != ${expect}`);
  }
  const sampledInReport = [...want.values()].filter((t) => t.samples > 0).length;
  checks.equal(cpuThreads.length, sampledInReport, 'one profiler thread per sampled thread');
  checks.equal(cpuBad.length, 0, `CPU time of every thread = samples x interval, Idle 0 ${cpuBad.slice(0, 3)}`);
  const idle = cpuThreads.filter((t) => t.name.startsWith('Idle'));
  const busy = cpuThreads.filter((t) => !t.name.startsWith('Idle')).slice(0, 5);
  for (const t of busy) {
    const s = pq(['thread', 'samples', '--thread', t.threadHandle]);
    checks.equal(s.categoryBreakdown.totalSamples, want.get(keyOf(t)).samples,
                 `${t.name} (${t.processName}) running samples = report`);
  }
  const marked = cpuThreads.find((t) => t.markerCount > 0);
  if (marked) { // the CSwitch markers of a trace with context switches carry their own labels
    const list = pq(['thread', 'markers', '--thread', marked.threadHandle, '--list', '--limit',
                     '3'], false);
    checks.ok(/Running .* CPU \d+, priority/.test(list),
              `${marked.name}: CSwitch markers are labelled in the marker table`);
    checks.equal(report.slices.count > 0, true, 'the report has slices too');
  }
  for (const t of idle.slice(0, 3)) {
    const active = pq(['thread', 'samples', '--thread', t.threadHandle]);
    const all = pq(['thread', 'samples', '--thread', t.threadHandle, '--include-idle']);
    checks.equal(active.categoryBreakdown.totalSamples, 0, `${t.name}: no running samples`);
    checks.equal(all.categoryBreakdown.totalSamples, want.get(keyOf(t)).samples,
                 `${t.name}: all samples with --include-idle = report`);
  }
  // The sample times the profiler reads (the timeDeltas column added up, or the time column)
  // are the file's: zoomed to between two of the busiest thread's samples, a third of the way
  // in and two thirds, it counts the samples the file's times put there. Last: profiler-cli
  // 0.10.0 goes on counting in the zoomed range after a `zoom pop`.
  if (busy.length > 0) {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    const t = busy[0];
    const mine = doc.threads[Number(t.threadHandle.slice(2))];
    checks.equal(mine.tid, t.tid, `${t.name}: the file's thread at the profiler's index`);
    let sum = 0;
    const times = mine.samples.time ?? mine.samples.timeDeltas.map((d) => (sum += d));
    const i = Math.max(1, Math.floor(times.length / 3)), j = Math.floor((2 * times.length) / 3);
    const root = pq(['thread', 'info', '--thread', t.threadHandle]).context.rootRange.start;
    const lo = (times[i - 1] + times[i]) / 2 - root, hi = (times[j - 1] + times[j]) / 2 - root;
    let expect = 0;
    for (let k = i; k < j; k++) expect += mine.samples.stack[k] === null ? 0 : 1;
    pq(['zoom', 'push', `${lo}ms,${hi}ms`]);
    const zoomed = pq(['thread', 'samples', '--thread', t.threadHandle]);
    checks.ok(times[i - 1] < times[i] && times[j - 1] < times[j], `${t.name}: the window's ends fall between samples`);
    checks.equal(zoomed.categoryBreakdown.totalSamples, expect,
                 `${t.name}: samples between ${lo.toFixed(4)} and ${hi.toFixed(4)} ms (${mine.samples.time ? 'time' : 'timeDeltas'})`);
  }
} finally {
  try { pq(['stop', '--all'], false); } catch { /* already stopped */ }
  fs.rmSync(sessions, {recursive: true, force: true});
}
checks.done();
