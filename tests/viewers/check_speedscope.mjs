// speedscope (the npm package's own app, dist/release) in headless Chromium, served on
// 127.0.0.1, opening a Perch speedscope export through #profileURL= as a user's link would.
// Asserts: no console errors, the profile opened is the busiest non-idle thread of
// `perch report --json`, and its total weight is that thread's samples x the interval.
//   node check_speedscope.mjs EXPORT.json REPORT.json SCREENSHOT.png [INTERVAL_NS]
import path from 'node:path';
import {createRequire} from 'node:module';
import {Checks, busiestThread, launch, readReport, serve, timed, watchErrors} from './lib.mjs';

const [file, reportFile, shot, intervalArg] = process.argv.slice(2);
const interval = Number(intervalArg || 1000000);
const checks = new Checks(`speedscope ${path.basename(file)}`);
const require = createRequire(import.meta.url);
const app = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release');
const report = readReport(reportFile);
const want = busiestThread(report);

const server = await serve({'/data/': path.dirname(path.resolve(file)), '/': app});
const browser = await launch(path.join(path.dirname(shot), '..', 'chromium', 'speedscope'));
try {
  const page = await browser.newPage();
  // SwiftShader's WebGL fallback warnings are the headless environment's, not speedscope's.
  const errors = watchErrors(page, ['WebGL', 'GL Driver']);
  const base = `http://127.0.0.1:${server.port}`;
  const url = `${base}/#profileURL=${encodeURIComponent(`${base}/data/${path.basename(file)}`)}`;
  const opened = await timed('load and open', async () => {
    await page.goto(url);
    // speedscope keeps its state in Preact components; the App's props hold the active
    // profile (a speedscope Profile object: getName(), getTotalWeight()).
    const handle = await page.waitForFunction(() => {
      const seen = new Set();
      const walk = (v) => {
        if (!v || typeof v !== 'object' || seen.has(v)) return null;
        seen.add(v);
        const props = v.__c && v.__c.props;
        if (props && props.activeProfileState && props.activeProfileState.profile) return props;
        for (const k of Array.isArray(v.__k) ? v.__k : []) {
          const r = walk(k);
          if (r) return r;
        }
        return null;
      };
      const host = [...document.querySelectorAll('*')].find((e) => e.__k);
      const props = host && walk(host.__k);
      if (!props) return null;
      const a = props.activeProfileState;
      const group = props.profileGroup || {};
      const names = (group.profiles || []).map((p) => (p.profile || p).getName?.() ?? '');
      return {name: a.profile.getName(), weight: a.profile.getTotalWeight(), index: a.index,
              unit: a.profile.getWeightUnit(), names};
    }, {timeout: 60000, polling: 250});
    return handle.jsonValue();
  });
  await new Promise((r) => setTimeout(r, 500));
  await page.screenshot({path: shot});
  console.log(`     opened profile ${opened.index}: "${opened.name}", ${opened.weight} ${opened.unit}`);
  checks.equal(errors.length, 0, `console errors ${errors.slice(0, 3).join(' | ')}`);
  const label = want.tid === 0 ? null : `(${want.pid}) `;
  checks.ok(opened.name.includes(label) &&
            (opened.name.endsWith(` ${want.tid}`) || opened.name.endsWith(`(${want.tid})`)),
            `opens the busiest non-idle thread, pid ${want.pid} tid ${want.tid}: "${opened.name}"`);
  checks.ok(!opened.name.startsWith('Idle'), 'the opened profile is not an idle profile');
  checks.equal(opened.unit, 'nanoseconds', 'weight unit');
  const idleNames = opened.names.filter((n) => n.startsWith('Idle'));
  const idleRows = report.top_threads.filter((t) => t.tid === 0).length;
  checks.equal(new Set(idleNames).size, idleRows,
               `idle profiles named by CPU, all different (${idleNames.slice(0, 2).join(', ')}, ...)`);
  checks.ok(idleNames.every((n) => /^Idle \(CPU \d+\)$/.test(n)), 'idle names are "Idle (CPU n)"');
  checks.equal(opened.weight, want.samples * interval,
               `total weight = report samples ${want.samples} x ${interval} ns`);
} finally {
  await browser.close();
  server.close();
}
checks.done();
