// perch report --html: renders the report from the two JSON blocks of the page, with no network
// and no other script. #perch-report is exactly `perch report --json`; #perch-html holds what
// only the page draws: CPU over time per process, the top functions, and the call tree of the
// flame graph (flat arrays parent, name, value, parents before children; node 0 is the root,
// all timer samples).
'use strict';
(function () {
  const t0 = performance.now();
  const $ = (id) => document.getElementById(id);
  const R = JSON.parse($('perch-report').textContent), H = JSON.parse($('perch-html').textContent);
  const data = {report: R, html: H};
  // KWAIT_REASON (wdm.h, Windows Driver Kit): the wait reasons of CSwitch's OldThreadWaitReason.
  const WAIT = ['Executive', 'FreePage', 'PageIn', 'PoolAllocation', 'DelayExecution',
    'Suspended', 'UserRequest', 'WrExecutive', 'WrFreePage', 'WrPageIn', 'WrPoolAllocation',
    'WrDelayExecution', 'WrSuspended', 'WrUserRequest', 'WrEventPair', 'WrQueue',
    'WrLpcReceive', 'WrLpcReply', 'WrVirtualMemory', 'WrPageOut', 'WrRendezvous',
    'WrKeyedEvent', 'WrTerminated', 'WrProcessInSwap', 'WrCpuRateControl', 'WrCalloutStack',
    'WrKernel', 'WrResource', 'WrPushLock', 'WrMutex', 'WrQuantumEnd', 'WrDispatchInt',
    'WrPreempted', 'WrYieldExecution', 'WrFastMutex', 'WrGuardedMutex', 'WrRundown',
    'WrAlertByThreadId', 'WrDeferredPreempt'];
  const fmt = (n) => Number(n).toLocaleString('en-US');
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
  const ms = (ticks) => (R.header.perf_freq ? ticks * 1000 / R.header.perf_freq : 0);
  const cpuMs = (samples) => samples * H.interval_ns / 1e6;

  // ---- summary ---------------------------------------------------------------------------
  function summary() {
    const h = R.header;
    $('title').textContent = `Perch report: ${R.source}`;
    $('sub').textContent = `Windows build ${h.build}, ${h.cpus} CPUs, ${h.pointer_size * 8}-bit, ` +
      `${fmt(h.perf_freq)} ticks/s, events lost ${fmt(h.events_lost)}, buffers lost ${fmt(h.buffers_lost)}`;
    const cards = [
      ['timer samples', R.samples], ['with a stack', R.samples_with_stack],
      ['PMC samples', R.pmc_samples], ['distinct stacks', R.stacks_distinct],
      ['slices', R.slices.count], ['run time (slices)', `${fmt(ms(R.slices.run_ticks).toFixed(1))} ms`],
      ['sample interval', `${H.interval_ns / 1e6} ms`], ['stack hash', R.stack_hash],
    ];
    $('cards').innerHTML = cards.map(([k, v]) =>
      `<div class="card">${esc(k)}<b>${typeof v === 'number' ? fmt(v) : esc(v)}</b></div>`).join('');
  }

  // ---- tables ----------------------------------------------------------------------------
  // rows: arrays of cells; cols: [title, numeric?]; bar: the column whose share is shaded.
  function table(id, cols, rows, bar) {
    const max = bar === undefined ? 0 : Math.max(1, ...rows.map((r) => r[bar]));
    const head = cols.map(([c, n]) => `<th class="${n ? 'n' : ''}">${esc(c)}</th>`).join('');
    const body = rows.map((r) => '<tr>' + r.map((v, i) => {
      const num = cols[i][1];
      const style = i === bar ? ` style="background:linear-gradient(90deg,#e8eef8 ${100 * v / max}%,transparent 0)"` : '';
      return `<td class="${num ? 'n' : 'name'}"${style}>${num ? fmt(v) : esc(v)}</td>`;
    }).join('') + '</tr>').join('');
    $(id).innerHTML = `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
  }

  function tables() {
    table('processes', [['pid', 1], ['process'], ['samples', 1], ['CPU ms (samples)', 1]],
          R.top_processes.map((p) => [p.pid, p.name, p.samples, cpuMs(p.samples)]), 2);
    const name = (t) => (t.tid === 0 && t.cpu !== undefined ? `Idle (CPU ${t.cpu})` : t.name || `thread ${t.tid}`);
    table('threads', [['pid', 1], ['tid', 1], ['process'], ['thread'], ['samples', 1], ['run ms (slices)', 1]],
          R.top_threads.slice(0, H.top).map((t) => [t.pid, t.tid, t.process, name(t), t.samples,
                                                     Math.round(ms(t.run_ticks))]), 4);
    table('modules', [['module'], ['samples at the IP', 1]],
          R.top_modules.map((m) => [m.name, m.samples]), 1);
    table('functions', [['function'], ['self', 1], ['total', 1]],
          H.functions.slice(0, H.top).map((f) => [f.name, f.self, f.total]), 1);
    const s = R.slices;
    table('slices', [['slices'], ['value', 1]], [
      ['count', s.count], ['run ms', Math.round(ms(s.run_ticks))], ['idle ms', Math.round(ms(s.idle_ticks))],
      ['open at start', s.open_start], ['open at end', s.open_end], ['stale', s.stale],
      ['with a ready time', s.with_ready],
      ['mean ready latency us', s.with_ready ? Math.round(1000 * ms(s.ready_latency_ticks) / s.with_ready) : 0]]);
    const waits = Object.entries(s.wait_reasons).sort((a, b) => b[1] - a[1]);
    table('waits', [['wait reason at switch-out'], ['slices', 1]],
          waits.map(([k, v]) => [k === '-1' ? 'unknown' : `${k} ${WAIT[k] || ''}`, v]), 1);
    if (!waits.length) $('waits').innerHTML = '<p class="muted">(no context switches in this trace)</p>';
    const ledger = Object.entries(R.ledger).sort((a, b) => b[1] - a[1]);
    table('ledger', [['not turned into model data'], ['count', 1]], ledger, 1);
    if (!ledger.length) $('ledger').innerHTML = '<p class="muted">(empty)</p>';
  }

  // ---- CPU over time per process -----------------------------------------------------------
  function timeline() {
    const T = H.timeline, max = Math.max(1, ...T.series.flatMap((s) => s.counts));
    const w = T.buckets;
    $('timeline-scale').textContent = `${(T.bucket_ns / 1e6).toFixed(2)} ms per bar, ` +
      `${(w * T.bucket_ns / 1e9).toFixed(2)} s in all; a full bar is ${fmt(cpuMs(max))} ms of CPU`;
    $('timeline').innerHTML = T.series.map((s) => {
      const bars = s.counts.map((c, i) => (c ? `<rect x="${i}" y="${24 - 24 * c / max}" width="1" height="${24 * c / max}"><title>${
        (i * T.bucket_ns / 1e6).toFixed(1)} ms: ${fmt(cpuMs(c))} ms CPU</title></rect>` : '')).join('');
      const total = s.counts.reduce((a, b) => a + b, 0);
      return `<div class="row"><div class="label" title="${esc(s.name)}">${esc(s.name)} <span class="muted">${fmt(total)}</span></div>` +
        `<svg viewBox="0 0 ${w} 24" preserveAspectRatio="none">${bars}</svg></div>`;
    }).join('');
  }

  // ---- flame graph ---------------------------------------------------------------------------
  const F = H.flame, n = F.parent.length;
  const kids = Array.from({length: n}, () => []);
  for (let i = 1; i < n; i++) kids[F.parent[i]].push(i);
  for (const k of kids) k.sort((a, b) => F.value[b] - F.value[a]);
  const depth = new Int32Array(n);
  for (let i = 1; i < n; i++) depth[i] = depth[F.parent[i]] + 1; // parents come first
  const label = (i) => F.names[F.name[i]];
  let zoom = 0, query = '', boxes = [];
  const ROW = 17;

  function matches(i) { return query && label(i).toLowerCase().includes(query); }

  // Samples under matching frames, each sample once (a match under a match is not added).
  function matched(i, under) {
    const hit = !under && matches(i);
    if (hit) return F.value[i];
    let s = 0;
    for (const k of kids[i]) s += matched(k, under);
    return s;
  }

  function draw() {
    const canvas = $('flame'), ctx = canvas.getContext('2d');
    const width = canvas.clientWidth, ancestors = [];
    for (let a = zoom; a !== 0; a = F.parent[a]) ancestors.unshift(F.parent[a]);
    let maxDepth = 0;
    const rows = [];
    (function walk(i, x, d) {
      const wpx = width * F.value[i] / F.value[zoom];
      if (wpx < 0.3) return;
      rows.push([i, x, d, wpx]);
      maxDepth = Math.max(maxDepth, d);
      let cx = x;
      for (const k of kids[i]) { walk(k, cx, d + 1); cx += width * F.value[k] / F.value[zoom]; }
    })(zoom, 0, ancestors.length);
    const dpr = window.devicePixelRatio || 1;
    canvas.height = (maxDepth + 1) * ROW * dpr;
    canvas.width = width * dpr;
    canvas.style.height = `${(maxDepth + 1) * ROW}px`;
    ctx.scale(dpr, dpr);
    ctx.font = '11px ui-monospace, monospace';
    ctx.textBaseline = 'middle';
    boxes = ancestors.map((a, d) => [a, 0, d, width]).concat(rows);
    for (const [i, x, d, wpx] of boxes) {
      const kernel = /\.sys!|ntoskrnl|hal\.dll/.test(label(i));
      ctx.fillStyle = matches(i) ? '#e040a0' : d < ancestors.length ? '#ccc'
        : i === 0 || depth[i] <= 2 ? '#9bb3d9' : kernel ? '#f0a050' : '#f2d060';
      ctx.fillRect(x, d * ROW, Math.max(wpx - 0.5, 0.5), ROW - 1);
      if (wpx > 30) {
        ctx.fillStyle = '#222';
        ctx.save();
        ctx.beginPath();
        ctx.rect(x, d * ROW, wpx - 2, ROW);
        ctx.clip();
        ctx.fillText(`${label(i)} (${fmt(F.value[i])})`, x + 3, d * ROW + ROW / 2);
        ctx.restore();
      }
    }
    const m = query ? matched(zoom, false) : 0;
    $('flame-match').textContent = query ? `matched: ${fmt(m)} samples (${(100 * m / F.value[0]).toFixed(2)} %)` : '';
  }

  function hit(ev) {
    const r = $('flame').getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    return boxes.find(([, bx, d, w]) => x >= bx && x < bx + w && y >= d * ROW && y < (d + 1) * ROW);
  }

  function flame() {
    const canvas = $('flame');
    canvas.addEventListener('click', (ev) => { const b = hit(ev); if (b) { zoom = b[0]; draw(); } });
    canvas.addEventListener('mousemove', (ev) => {
      const b = hit(ev);
      $('flame-tip').textContent = b ? `${label(b[0])}: ${fmt(F.value[b[0]])} samples, ` +
        `${(100 * F.value[b[0]] / F.value[0]).toFixed(2)} % of all` : '';
    });
    $('flame-search').addEventListener('input', (ev) => { query = ev.target.value.toLowerCase(); draw(); });
    $('flame-reset').addEventListener('click', () => { zoom = 0; draw(); });
    window.addEventListener('resize', draw);
    draw();
  }

  const phases = {};
  for (const [name, fn] of [['summary', summary], ['tables', tables], ['timeline', timeline], ['flame', flame]]) {
    const t = performance.now();
    fn();
    phases[name] = Math.round(performance.now() - t);
  }
  // For a reader of the page's state (the headless check): what is drawn and how long it took.
  window.perch = {
    data, rootValue: F.value[0], nodes: n, renderMs: 0, phases,
    zoomTo(name) { const i = F.name.findIndex((k, j) => j > 0 && F.names[k] === name); if (i > 0) { zoom = i; draw(); } return i > 0 ? F.value[i] : 0; },
    search(q) { query = q.toLowerCase(); draw(); return query ? matched(zoom, false) : 0; },
    zoomed() { return {name: label(zoom), value: F.value[zoom]}; },
  };
  window.perch.renderMs = performance.now() - t0;
  $('render').textContent = `drawn in ${window.perch.renderMs.toFixed(0)} ms`;
})();
