// `perch report --html` opened from a file (as from a mail attachment) in Debian's headless
// Chromium. Asserts: no request besides the page itself (no network, no external script);
// no console errors; the embedded report JSON is `perch report --json`'s; the tables show its
// numbers; the flame graph's root weight is the sample count, zooming into the busiest
// process gives its samples and search finds frames; the page renders in under a second.
//   node check_html.mjs PAGE.html REPORT.json SCREENSHOT.png [LIMIT_MS (default 1000)]
import fs from 'node:fs';
import path from 'node:path';
import {Checks, busiestThread, launch, readReport, timed, watchErrors} from './lib.mjs';

const [file, reportFile, shot, limitArg] = process.argv.slice(2);
const limit = Number(limitArg || 1000);
const checks = new Checks(`html ${path.basename(file)}`);
const report = readReport(reportFile);
const html = fs.readFileSync(file, 'utf8');
checks.ok(!/<script[^>]+src=|<link[^>]+href=|https?:\/\//i.test(html.replace(/"[^"]*"/g, '')),
          'no external script, style or link in the markup');

const browser = await launch(path.join(path.dirname(shot), '..', 'chromium', 'html'));
try {
  const page = await browser.newPage();
  const errors = watchErrors(page);
  const requests = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (req.url() !== `file://${path.resolve(file)}`) requests.push(req.url());
    req.continue();
  });
  await timed('load', () => page.goto(`file://${path.resolve(file)}`, {waitUntil: 'load'}));
  const got = await page.evaluate(() => {
    const cell = (id, row, col) => document.querySelector(`#${id} tbody tr:nth-child(${row}) td:nth-child(${col})`)?.textContent;
    const nav = performance.getEntriesByType('navigation')[0];
    return {
      hasPerch: typeof window.perch === 'object',
      embedded: JSON.parse(document.getElementById('perch-report').textContent),
      rootValue: window.perch?.rootValue, renderMs: window.perch?.renderMs, phases: window.perch?.phases,
      loadMs: nav ? nav.loadEventEnd - nav.startTime : null,
      proc1: [cell('processes', 1, 2), cell('processes', 1, 3)],
      module1: [cell('modules', 1, 1), cell('modules', 1, 2)],
      slices: cell('slices', 1, 2),
      timelineRows: document.querySelectorAll('#timeline .row').length,
      flameHeight: document.getElementById('flame').height,
    };
  });
  checks.ok(got.hasPerch, 'the page script ran');
  const differs = Object.keys({...report, ...got.embedded}).filter(
    (k) => JSON.stringify(report[k]) !== JSON.stringify(got.embedded[k]));
  checks.equal(differs.length, 0, `the embedded JSON is perch report --json (keys that differ: ${differs.slice(0, 5)})`);
  checks.equal(got.rootValue, report.samples, 'flame graph root weight = timer samples');
  const p0 = report.top_processes[0], m0 = report.top_modules[0];
  const num = (s) => Number(String(s).replace(/,/g, ''));
  checks.ok(got.proc1[0] === p0.name && num(got.proc1[1]) === p0.samples,
            `processes table, first row: ${got.proc1} = ${p0.name} ${p0.samples}`);
  checks.ok(got.module1[0] === m0.name && num(got.module1[1]) === m0.samples,
            `modules table, first row: ${got.module1} = ${m0.name} ${m0.samples}`);
  checks.equal(num(got.slices), report.slices.count, 'slices table count');
  checks.ok(got.timelineRows > 0, `${got.timelineRows} rows of CPU over time`);
  checks.ok(got.flameHeight > 0, 'the flame graph is drawn');
  const busy = busiestThread(report);
  const proc = report.top_processes.find((p) => p.pid === busy.pid);
  const zoomed = await page.evaluate((name) => window.perch.zoomTo(name), `${proc.name} (${proc.pid})`);
  checks.equal(zoomed, proc.samples, `zoom into ${proc.name} (${proc.pid}): its samples`);
  await page.screenshot({path: shot.replace(/\.png$/, '-zoomed.png'), fullPage: false});
  await page.click('#flame-reset');
  const hits = await page.evaluate(() => window.perch.search('ntoskrnl.exe'));
  checks.ok(hits > 0 && hits <= report.samples, `search "ntoskrnl.exe": ${hits} samples`);
  await page.evaluate(() => { window.perch.search(''); document.querySelector('#flame-reset').click(); });
  checks.equal(requests.length, 0, `requests besides the page ${requests.slice(0, 3)}`);
  checks.equal(errors.length, 0, `console errors ${errors.slice(0, 3).join(' | ')}`);
  checks.ok(got.renderMs < limit, `rendered in ${got.renderMs.toFixed(0)} ms of page time (< ${limit} ms; ` +
            `load event ${got.loadMs?.toFixed(0)} ms; ${JSON.stringify(got.phases)})`);
  await page.screenshot({path: shot, fullPage: true});
} finally {
  await browser.close();
}
checks.done();
