// Shared helpers of the viewer checks (tests/viewers/check_*.mjs): Debian's Chromium driven by
// puppeteer-core (never a bundled browser), a static file server on 127.0.0.1, the
// `perch report --json` figures the checks compare with, and a small assertion counter.
// Every check prints one line per assertion and ends with "N passed, N failed".
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const CHROMIUM = process.env.PERCH_CHROMIUM || '/usr/bin/chromium';

// The flags the environment notes recommend for a closed network, plus --no-sandbox as root.
export async function launch(userDataDir) {
  fs.rmSync(userDataDir, {recursive: true, force: true});
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    defaultViewport: {width: 1600, height: 1000},
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${userDataDir}`,
    ],
  });
}

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.wasm': 'application/wasm', '.woff2': 'font/woff2', '.png': 'image/png',
};

// Serves `roots` ({urlPrefix: directory}) on 127.0.0.1 at a free port; resolves to
// {port, close}. Paths never leave their directory.
export async function serve(roots) {
  const server = http.createServer((req, res) => {
    let url = decodeURIComponent(req.url.split('?')[0]);
    if (url.endsWith('/')) url += 'index.html';
    for (const [prefix, dir] of Object.entries(roots)) {
      if (!url.startsWith(prefix)) continue;
      const file = path.join(dir, url.slice(prefix.length));
      if (!file.startsWith(path.resolve(dir)) || !fs.existsSync(file)) break;
      res.writeHead(200, {'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream'});
      fs.createReadStream(file).pipe(res);
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {port: server.address().port, close: () => server.close()};
}

// Console errors and page errors of a page, for "no console errors" assertions. `ignore`
// lists substrings of messages that are the environment's, not the page's.
export function watchErrors(page, ignore = []) {
  const errors = [];
  const keep = (text) => !ignore.some((s) => text.includes(s));
  page.on('console', (m) => {
    if (m.type() === 'error' && keep(m.text())) errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => { if (keep(e.message)) errors.push(`pageerror: ${e.message}`); });
  return errors;
}

export function readReport(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

// The report's threads keyed like the viewers' tracks: "pid/tid" (idle: "idle/cpu").
export function reportThreads(report) {
  const out = new Map();
  for (const t of report.top_threads) {
    out.set(t.tid === 0 ? `idle/${t.cpu}` : `${t.pid}/${t.tid}`, t);
  }
  return out;
}

// The busiest thread that is not an idle thread.
export function busiestThread(report) {
  return report.top_threads.find((t) => t.tid !== 0);
}

export class Checks {
  constructor(name) {
    this.name = name;
    this.passed = 0;
    this.failed = 0;
  }

  ok(cond, what) {
    if (cond) this.passed++;
    else this.failed++;
    console.log(`${cond ? 'ok  ' : 'FAIL'} ${this.name}: ${what}`);
    return cond;
  }

  equal(actual, expected, what) {
    return this.ok(actual === expected, `${what}: ${actual} (expected ${expected})`);
  }

  // Prints the closing line and exits non-zero on any failure.
  done() {
    console.log(`${this.name}: ${this.passed} passed, ${this.failed} failed`);
    process.exit(this.failed === 0 && this.passed > 0 ? 0 : 1);
  }
}

export async function timed(what, fn) {
  const t0 = Date.now();
  const r = await fn();
  console.log(`     ${what}: ${Date.now() - t0} ms`);
  return r;
}
