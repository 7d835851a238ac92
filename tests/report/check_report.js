// Opens an `nnfuse report` HTML file in headless Chromium and checks that it renders offline:
// no console errors, no page errors, no request other than the file itself (data: URLs aside),
// the before/after graphs drawn as non-empty SVGs with nodes, the summary, fused-node and
// declined tables and the remaining sections present, and a screenshot that is not blank.
//
//   node check_report.js REPORT.html [--screenshot OUT.png] [--min-fused N] [--min-bars N]
//
// --min-bars N requires N kernel-time bars (`#kernel-times .bar`), for reports made with
// --measure. puppeteer-core comes from $NNFUSE_PUPPETEER_DIR (default /tmp/nnfuse-puppeteer),
// the browser from $CHROMIUM (default /usr/bin/chromium). Exit 0 and one "report OK" line on
// success; otherwise exit 1 and one line per problem on stderr.
"use strict";
const fs = require("fs");
const path = require("path");
const { pathToFileURL } = require("url");

const VIEWPORT = { width: 1400, height: 1000 };
const MAX_SHOT_HEIGHT = 2400;  // keeps the PNG small; the top of the page shows both graphs
// A blank or whited-out page has 0% non-background pixels and one color; a lone heading about
// 0.3%. A real page of unfilled Graphviz boxes on white measured 1.7%, so the bar is 1%.
const MIN_NON_BACKGROUND = 0.01;
const MIN_COLORS = 3;
// Within a graph's own box: an SVG that has a size but draws nothing (hidden, transparent) is
// all background; a sparse real graph is well above this.
const MIN_GRAPH_INK = 0.002;

function usage(msg) {
  if (msg) process.stderr.write("check_report: " + msg + "\n");
  (msg ? process.stderr : process.stdout).write(
      "usage: node check_report.js REPORT.html [--screenshot OUT.png] [--min-fused N] " +
      "[--min-bars N]\n");
  process.exit(msg ? 2 : 0);
}

function parseArgs(argv) {
  const a = { file: null, screenshot: null, minFused: 1, minBars: 0 };
  const count = (flag, v) => {
    if (v === undefined || !/^\d+$/.test(v)) usage(flag + " needs a non-negative integer");
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i];
    if (s === "--screenshot") {
      a.screenshot = argv[++i];
      if (!a.screenshot) usage("--screenshot needs a file name");
    } else if (s === "--min-fused") {
      a.minFused = count(s, argv[++i]);
    } else if (s === "--min-bars") {
      a.minBars = count(s, argv[++i]);
    } else if (s === "-h" || s === "--help") {
      usage();
    } else if (s.startsWith("-") || a.file) {
      usage("unexpected argument " + s);
    } else {
      a.file = s;
    }
  }
  if (!a.file) usage("no report file given");
  return a;
}

function loadPuppeteer() {
  const dir = process.env.NNFUSE_PUPPETEER_DIR || "/tmp/nnfuse-puppeteer";
  const mod = path.join(dir, "node_modules", "puppeteer-core");
  try {
    return require(mod);
  } catch (e) {
    throw new Error("cannot load puppeteer-core from " + mod + " (install it with " +
                    "tests/report/report_browser.py, or set NNFUSE_PUPPETEER_DIR): " +
                    e.message.split("\n")[0]);
  }
}

// The URL without its fragment, percent-decoded, so that the same file compares equal however
// Chromium escaped it.
function normalizeUrl(u) {
  try {
    return decodeURIComponent(u.split("#")[0]);
  } catch (e) {
    return u.split("#")[0];
  }
}

// Runs in the page: what the DOM checks need, as plain data.
function inspectPage() {
  const out = { graphs: {}, missing: [] };
  const need = {
    "#summary": "section#summary",
    "#summary-table": "table#summary-table",
    "#fused-nodes": "table#fused-nodes",
    "#declined": "table#declined",
    "#reference-kernels": "section#reference-kernels",
    "#kernel-times": "section#kernel-times",
    "#warnings": "section#warnings",
  };
  for (const [name, sel] of Object.entries(need)) {
    if (!document.querySelector(sel)) out.missing.push(name);
  }
  for (const id of ["graph-before", "graph-after"]) {
    const div = document.getElementById(id);
    if (!div) {
      out.graphs[id] = null;
      continue;
    }
    // Top-level SVGs only (none nested in another SVG). One inside a closed <details> has no
    // box, so its <details> are opened while it is measured and closed again after.
    const svgs = Array.from(div.querySelectorAll("svg")).filter(
        (s) => !s.parentElement.closest("svg"));
    const info = svgs.map((svg) => {
      const opened = [];
      for (let d = svg.closest("details"); d; d = d.parentElement.closest("details")) {
        if (!d.open) {
          d.open = true;
          opened.push(d);
        }
      }
      const r = svg.getBoundingClientRect();
      // The part of it on screen: scrolling boxes around it clip the rest.
      let [x0, y0, x1, y1] = [r.left, r.top, r.right, r.bottom];
      for (let e = svg.parentElement; e && e !== document.body; e = e.parentElement) {
        const st = getComputedStyle(e);
        if (st.overflowX === "visible" && st.overflowY === "visible") continue;
        const c = e.getBoundingClientRect();
        [x0, y0, x1, y1] = [Math.max(x0, c.left), Math.max(y0, c.top), Math.min(x1, c.right),
                            Math.min(y1, c.bottom)];
      }
      const nodes = svg.querySelectorAll("g.node").length;
      for (const d of opened) d.open = false;
      return { width: r.width, height: r.height, nodes, inDetails: !!svg.closest("details"),
               shown: { x: x0 + window.scrollX, y: y0 + window.scrollY,
                        width: Math.max(0, x1 - x0), height: Math.max(0, y1 - y0) } };
    });
    out.graphs[id] = { svgs: info, blocks: div.querySelectorAll("details.block").length };
  }
  out.fusedRows = document.querySelectorAll("#fused-nodes tbody tr").length;
  out.declinedRows = document.querySelectorAll("#declined tbody tr").length;
  const bars = Array.from(document.querySelectorAll("#kernel-times .bar"));
  out.bars = bars.length;
  out.visibleBars = bars.filter((b) => b.getBoundingClientRect().width > 0).length;
  out.pageWidth = document.documentElement.scrollWidth;
  out.pageHeight = document.documentElement.scrollHeight;
  return out;
}

// Runs in a blank page: decodes the PNG (a data: URL) into a canvas and counts its colors.
async function measurePng(dataUrl) {
  const img = new Image();
  await new Promise((resolve, reject) => {
    img.onload = resolve;
    img.onerror = () => reject(new Error("the screenshot PNG does not decode"));
    img.src = dataUrl;
  });
  const w = img.naturalWidth, h = img.naturalHeight;
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(img, 0, 0);
  const px = new Uint32Array(ctx.getImageData(0, 0, w, h).data.buffer);
  const counts = new Map();
  for (let i = 0; i < px.length; i++) counts.set(px[i], (counts.get(px[i]) || 0) + 1);
  let top = 0;
  for (const c of counts.values()) top = Math.max(top, c);
  return { width: w, height: h, colors: counts.size,
           nonBackground: px.length ? 1 - top / px.length : 0 };
}

async function check(args, problems) {
  const file = path.resolve(args.file);
  if (!fs.existsSync(file)) {
    problems.push("no such file");
    return null;
  }
  const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
  if (!fs.existsSync(chromium)) {
    throw new Error("no browser at " + chromium + " (Debian package chromium; " +
                    "scripts/install_deps.sh installs it, or set CHROMIUM)");
  }
  const puppeteer = loadPuppeteer();
  const url = pathToFileURL(file).href;
  const self = normalizeUrl(url);
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    defaultViewport: VIEWPORT,
    protocolTimeout: 120000,
  });
  try {
    const page = await browser.newPage();
    await page.setRequestInterception(true);
    const blocked = new Set();
    page.on("request", (req) => {
      const u = req.url();
      if (u.startsWith("data:") || normalizeUrl(u) === self) {
        req.continue();
      } else {
        problems.push("loads " + u + " (the report must not request anything)");
        blocked.add(u);
        req.abort("blockedbyclient");
      }
    });
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      const loc = m.location() || {};
      // The failed load of a request blocked above is already reported as that request.
      if (blocked.has(loc.url) && m.text().startsWith("Failed to load resource")) return;
      let where = "";
      if (loc.url) {
        where = " at " + loc.url + (loc.lineNumber !== undefined ? ":" + (loc.lineNumber + 1) : "");
      }
      problems.push("console error: " + m.text() + where);
    });
    page.on("pageerror", (e) => problems.push("page error: " + (e.message || String(e))));

    await page.goto(url, { waitUntil: "load", timeout: 120000 });
    // Scripts that run just after load (timers, animation frames) get their chance to fail.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 250))));
    const info = await page.evaluate(inspectPage);

    for (const m of info.missing) problems.push(m + " missing");
    let svgCount = 0;
    for (const id of ["graph-before", "graph-after"]) {
      const g = info.graphs[id];
      if (!g) {
        problems.push("#" + id + " missing");
        continue;
      }
      if (g.svgs.length === 0) {
        problems.push("#" + id + " has no <svg>");
        continue;
      }
      svgCount += g.svgs.length;
      if (!g.svgs.some((s) => !s.inDetails)) {
        problems.push("#" + id + " has no <svg> outside <details> (every graph is collapsed)");
      }
      g.svgs.forEach((s, k) => {
        const name = "#" + id + " svg " + (k + 1) + "/" + g.svgs.length +
                     (s.inDetails ? " (in <details>)" : "");
        if (!(s.width >= 1 && s.height >= 1)) {
          problems.push(name + " has a zero-size box (" + s.width.toFixed(1) + "x" +
                        s.height.toFixed(1) + ")");
        }
        if (s.nodes === 0) problems.push(name + " has no g.node (not a Graphviz graph?)");
      });
    }
    if (!info.missing.includes("#fused-nodes") && info.fusedRows < args.minFused) {
      problems.push("#fused-nodes has " + info.fusedRows + " body rows, expected at least " +
                    args.minFused);
    }
    if (!info.missing.includes("#kernel-times") && args.minBars > 0) {
      if (info.bars < args.minBars) {
        problems.push("#kernel-times has " + info.bars + " .bar elements, expected at least " +
                      args.minBars);
      } else if (info.visibleBars === 0) {
        problems.push("#kernel-times: every .bar has zero width");
      }
    }

    const height = Math.max(1, Math.min(info.pageHeight, MAX_SHOT_HEIGHT));
    const png = await page.screenshot({
      type: "png",
      clip: { x: 0, y: 0, width: VIEWPORT.width, height },
      captureBeyondViewport: true,
    });
    // Each graph's first SVG outside <details> must show ink where it is on screen (at most a
    // screenshot's size of it).
    // Every screenshot is taken before the blank page opens: a page in the background renders
    // no frames to capture.
    const graphShots = [];
    for (const id of ["graph-before", "graph-after"]) {
      const g = info.graphs[id];
      const svg = g && g.svgs.find((v) => !v.inDetails && v.width >= 1 && v.height >= 1);
      if (!svg) continue;  // already reported above
      if (svg.shown.width < 1 || svg.shown.height < 1) {
        problems.push("#" + id + " svg is entirely clipped by the boxes around it");
        continue;
      }
      const clip = { x: Math.max(0, svg.shown.x), y: Math.max(0, svg.shown.y),
                     width: Math.min(svg.shown.width, VIEWPORT.width),
                     height: Math.min(svg.shown.height, MAX_SHOT_HEIGHT) };
      graphShots.push({ id, png: await page.screenshot({ type: "png", clip,
                                                          captureBeyondViewport: true }) });
    }
    const blank = await browser.newPage();
    await blank.goto("about:blank");
    const measure = (buf) =>
        blank.evaluate(measurePng, "data:image/png;base64," + Buffer.from(buf).toString("base64"));
    const shot = await measure(png);
    for (const { id, png: graphPng } of graphShots) {
      const ink = await measure(graphPng);
      if (ink.nonBackground < MIN_GRAPH_INK || ink.colors < 2) {
        problems.push("#" + id + " svg draws nothing visible: " +
                      (100 * ink.nonBackground).toFixed(2) + "% of its " + ink.width + "x" +
                      ink.height + " pixels differ from its background (need " +
                      (100 * MIN_GRAPH_INK).toFixed(1) + "%)");
      }
    }
    if (shot.nonBackground < MIN_NON_BACKGROUND || shot.colors < MIN_COLORS) {
      problems.push("screenshot looks blank: " + (100 * shot.nonBackground).toFixed(2) +
                    "% of pixels differ from the background (need " +
                    (100 * MIN_NON_BACKGROUND).toFixed(0) + "%), " + shot.colors +
                    " distinct colors (need " + MIN_COLORS + ")");
    }
    if (args.screenshot) fs.writeFileSync(args.screenshot, png);
    return { svgCount, fusedRows: info.fusedRows, declinedRows: info.declinedRows, shot };
  } finally {
    await browser.close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const problems = [];
  let result;
  try {
    result = await check(args, problems);
  } catch (e) {
    problems.push((e && e.message ? e.message : String(e)).split("\n")[0]);
  }
  if (problems.length) {
    for (const p of problems) process.stderr.write("check_report: " + args.file + ": " + p + "\n");
    process.exit(1);
  }
  const s = result.shot;
  console.log("report OK: " + args.file + " (" + result.svgCount + " svg, " + result.fusedRows +
              " fused rows, " + result.declinedRows + " declined rows, screenshot " + s.width +
              "x" + s.height + ", " + (100 * s.nonBackground).toFixed(1) + "% non-background)");
}

main();
