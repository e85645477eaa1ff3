// The chrome export in the DevTools Performance panel that ships inside Debian's Chromium
// (devtools://devtools/bundled/trace_app.html), loaded through the panel's own "Load profile"
// file chooser as a user would. From the panel's parsed trace (the trace engine DevTools
// draws from) it asserts: no console errors; every thread's CPU-profile samples (its flame
// chart) equal `perch report --json`'s samples for that thread, idle threads per CPU; the
// busiest thread has profile calls (frames drawn); the trace has a time range; the running
// slices of every thread sum to the report's run time and their count to the report's slices.
// Then it shows the busiest thread's flame chart (200 ms around the middle of its samples)
// and takes a screenshot.
//   node check_devtools.mjs EXPORT.json REPORT.json SCREENSHOT.png
import path from 'node:path';
import {Checks, busiestThread, launch, readReport, reportThreads, timed, watchErrors}
  from './lib.mjs';

const [file, reportFile, shot] = process.argv.slice(2);
const checks = new Checks(`devtools ${path.basename(file)}`);
const report = readReport(reportFile);
const IDLE_TRACK = 0x7fff0000;

const browser = await launch(path.join(path.dirname(shot), '..', 'chromium', 'devtools'));
try {
  const page = await browser.newPage();
  // trace_app.html is DevTools without a page to debug: it says so (and SwiftShader warns).
  const errors = watchErrors(page, ['WebGL', 'GL Driver', 'Debugging connection']);
  const shown = new Promise((resolve) => page.on('console', (m) => {
    if (m.text().includes('Main._showAppUI')) resolve();
  }));
  await page.goto('devtools://devtools/bundled/trace_app.html');
  await shown;
  await page.evaluate(async () => {
    const UI = await import('./ui/legacy/legacy.js');
    await UI.ViewManager.ViewManager.instance().showView('timeline');
  });
  const [chooser] = await Promise.all([page.waitForFileChooser(), page.evaluate(async () => {
    const T = await import('./panels/timeline/timeline.js');
    T.TimelinePanel.TimelinePanel.instance().selectFileToLoad();
  })]);
  const seen = await timed('load and parse', async () => {
    await chooser.accept([path.resolve(file)]);
    return page.evaluate(async (idleTrack) => {
      const T = await import('./panels/timeline/timeline.js');
      const panel = T.TimelinePanel.TimelinePanel.instance();
      let pt = null;
      for (let i = 0; i < 600 && !pt; i++) {
        await new Promise((r) => setTimeout(r, 100));
        try { pt = panel.getParsedTraceForLayoutTests(); } catch { pt = null; }
      }
      if (!pt) return null;
      const d = pt.data || pt;
      const tracks = {};
      const key = (pid, tid) => (tid >= idleTrack ? `idle/${tid - idleTrack}` : `${pid}/${tid}`);
      for (const [pid, threads] of d.Samples.profilesInProcess) {
        for (const [tid, prof] of threads) {
          const t = tracks[key(pid, tid)] ||= {samples: 0, calls: 0, running: 0, runUs: 0};
          t.samples += prof.rawProfile.samples.filter((n) => n !== 1).length; // 1: the root
        }
      }
      let slices = 0;
      for (const [pid, proc] of d.Renderer.processes) {
        for (const [tid, thread] of proc.threads) {
          for (const e of thread.entries) {
            if (e.name === 'ProfileCall') { // a frame of the flame chart, from the samples
              (tracks[key(pid, tid)] ||= {samples: 0, calls: 0, running: 0, runUs: 0}).calls++;
              continue;
            }
            if (e.name !== 'running' && e.name !== 'idle') continue;
            slices++;
            if (e.name !== 'running') continue;
            const t = tracks[key(pid, tid)] ||= {samples: 0, calls: 0, running: 0, runUs: 0};
            t.running++;
            t.runUs += e.dur;
          }
        }
      }
      const b = d.Meta.traceBounds;
      return {tracks, slices, bounds: [b.min, b.max]};
    }, IDLE_TRACK);
  });
  checks.ok(seen !== null, 'the Performance panel parsed the trace');
  const want = reportThreads(report);
  let sampled = 0, sampleMismatch = [], runMismatch = [];
  for (const [k, t] of want) {
    const got = seen.tracks[k] || {samples: 0, runUs: 0};
    sampled += t.samples;
    if (got.samples !== t.samples) sampleMismatch.push(`${k}: ${got.samples} != ${t.samples}`);
    const runUs = t.run_ticks * 1e6 / report.header.perf_freq;
    if (Math.abs(got.runUs - runUs) > 0.002 * (got.running + 1))
      runMismatch.push(`${k}: ${got.runUs} us != ${runUs} us`);
  }
  const extra = Object.keys(seen.tracks).filter((k) => seen.tracks[k].samples && !want.has(k));
  checks.equal(sampleMismatch.length, 0,
               `samples of ${want.size} threads (${sampled} in all) = the report's ` +
               sampleMismatch.slice(0, 3).join(', '));
  checks.equal(extra.length, 0, `no sampled track the report does not have ${extra.slice(0, 3)}`);
  checks.equal(sampled, report.samples, 'total samples in the flame charts = report samples');
  const busy = busiestThread(report);
  const busyTrack = seen.tracks[`${busy.pid}/${busy.tid}`] || {calls: 0};
  checks.ok(busyTrack.calls > 0, `the busiest thread ${busy.pid}/${busy.tid} has ${busyTrack.calls} frames drawn`);
  checks.ok(seen.bounds[0] !== null && seen.bounds[1] > seen.bounds[0],
            `the trace has a time range ${seen.bounds}`);
  checks.equal(runMismatch.length, 0, `running time per thread = the report's ${runMismatch.slice(0, 3).join(', ')}`);
  checks.equal(seen.slices, report.slices.count, 'running + idle slices = report slices');
  checks.equal(errors.length, 0, `console errors ${errors.slice(0, 3).join(' | ')}`);
  // The picture: the busiest thread's flame chart in view. Close the shortcuts card and the
  // sidebar, expand the busiest process, zoom to 200 ms around the middle of its thread's
  // samples and scroll its track to the top.
  await page.evaluate(async (pid, tid) => {
    const T = await import('./panels/timeline/timeline.js');
    const TB = await import('./services/trace_bounds/trace_bounds.js');
    const panel = T.TimelinePanel.TimelinePanel.instance();
    const pt = panel.getParsedTraceForLayoutTests(); const d = pt.data || pt;
    const calls = d.Renderer.processes.get(pid)?.threads.get(tid)?.entries.filter((e) => e.name === 'ProfileCall') || [];
    const mid = calls.length ? calls[Math.floor(calls.length / 2)].ts : d.Meta.traceBounds.min;
    const min = Math.max(d.Meta.traceBounds.min, mid - 100000), max = min + 200000;
    TB.TraceBounds.BoundsManager.instance().setTimelineVisibleWindow({min, max, range: max - min});
    const chart = panel.getFlameChart().getMainFlameChart();
    const groups = chart.timelineData()?.groups || [];
    const i = groups.findIndex((g) => String(g.name).includes(`(${pid})`));
    if (i >= 0) chart.expandGroup(i, true);
    const j = groups.findIndex((g, k) => k > i && String(g.name).includes(`${tid}`));
    if (j >= 0) { chart.expandGroup(j, true); chart.scrollGroupIntoView?.(j); }
    for (const el of document.querySelectorAll('*')) {
      for (const b of el.shadowRoot ? el.shadowRoot.querySelectorAll('button[aria-label="Close"], devtools-button[aria-label="Close"]') : []) b.click();
    }
  }, busy.pid, busy.tid);
  await page.keyboard.press('Escape');
  await page.mouse.click(16, 39); // the toolbar's first button: hide the sidebar
  await new Promise((r) => setTimeout(r, 1500));
  await page.screenshot({path: shot});
} finally {
  await browser.close();
}
checks.done();
