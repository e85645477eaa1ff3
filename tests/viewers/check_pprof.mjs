// The pprof export read by `go tool pprof` (Debian's golang-go). Asserts, against
// `perch report --json`: -top's total = the report's samples, and pprof's header names the
// busiest process's image (the first mapping); -traces summed per pid label = the report's
// samples per process, Idle (pid 0) included, every sample labelled with pid and tid.
//   node check_pprof.mjs EXPORT.pb REPORT.json
import {execFileSync} from 'node:child_process';
import path from 'node:path';
import {Checks, busiestThread, readReport} from './lib.mjs';

const [file, reportFile] = process.argv.slice(2);
const checks = new Checks(`go tool pprof ${path.basename(file)}`);
const report = readReport(reportFile);
const pprof = (...args) => execFileSync('go', ['tool', 'pprof', '-sample_index=samples', ...args,
                                               file], {encoding: 'utf8', timeout: 120000,
                                                       maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore']});

const top = pprof('-top', '-nodecount=5');
const total = /Total samples = (\d+)/.exec(top);
checks.equal(total && Number(total[1]), report.samples,
             '-top total samples = report samples');
const busy = busiestThread(report);
const file0 = /File: (.*)/.exec(top);
checks.ok(file0 && file0[1].toLowerCase().endsWith(busy.process.toLowerCase()),
          `header File: is the busiest process's image ${busy.process}: ${file0 && file0[1]}`);

// -traces: blocks of "label: value" lines, then "VALUE frame" and more frames.
const byPid = new Map();
let unlabelled = 0, blocks = 0;
for (const block of pprof('-traces').split(/^-+\+-+$/m).slice(1)) {
  const labels = Object.fromEntries([...block.matchAll(/^\s+(\w+):\s+(.*)$/gm)].map((m) => [m[1], m[2]]));
  const value = /^\s+(\d+)\s+\S/m.exec(block.replace(/^\s+\w+:\s+.*$/gm, ''));
  if (!value) continue;
  blocks++;
  if (labels.pid === undefined || labels.tid === undefined) unlabelled++;
  byPid.set(labels.pid, (byPid.get(labels.pid) || 0) + Number(value[1]));
}
checks.ok(blocks > 0, `${blocks} traces read`);
checks.equal(unlabelled, 0, 'traces without a pid or tid label');
const bad = [];
for (const p of report.top_processes) {
  const got = byPid.get(String(p.pid)) || 0;
  if (got !== p.samples) bad.push(`${p.name} (${p.pid}): ${got} != ${p.samples}`);
}
checks.equal(bad.length, 0, `samples per process in -traces = the report's ${bad.slice(0, 3)}`);
checks.equal([...byPid.values()].reduce((a, b) => a + b, 0), report.samples,
             '-traces total = report samples');
checks.done();
