// tests/browser/tape_explorer.mjs: the tape explorer's page in a real browser. Runs
// build/examples/tape_explorer, opens its page from file:// in Debian's headless Chromium (driven
// through Debian's chromedriver over the WebDriver protocol: plain HTTP, no npm package), clicks
// through the whole backward and every step of the slider, and checks what the page shows:
//   * each backward step names the engine's entry, shows its formula exactly as the source file
//     has it, and its gradients as the page's data holds them (which tests/examples/
//     test_tape_explorer.cpp proves equal to the library's tensors);
//   * the padding row of the embedding's gradient is shown as exactly zero;
//   * at each step, the loss and pe's fingerprint are those the program printed from the library,
//     the embedding table and Adam's m and v those of the data, and the <pad> row's m and v zero.
// Then it takes a screenshot.
//
//     node tests/browser/tape_explorer.mjs <tape_explorer> <work folder> <source folder> [screenshot.png]
//
// Exit 0: passed; 1: failed (the reasons printed); 77: skipped, Chromium or chromedriver missing
// (scripts/setup.sh installs both), unless TAPEGRAD_REQUIRE_CHROMIUM=1 asks for a failure.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";

const [program, work, sourceDir, screenshot] = process.argv.slice(2);
const CHROMIUM = "/usr/bin/chromium", CHROMEDRIVER = "/usr/bin/chromedriver";
if (!existsSync(CHROMIUM) || !existsSync(CHROMEDRIVER)) {
  const why = `skipped: ${existsSync(CHROMIUM) ? CHROMEDRIVER : CHROMIUM} is not installed ` +
              "(scripts/setup.sh installs Debian's chromium and chromium-driver)";
  console.log(why);
  process.exit(process.env.TAPEGRAD_REQUIRE_CHROMIUM === "1" ? 1 : 77);
}

const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
}
const guard = setTimeout(() => finish("timed out after 90 s"), 90_000);  // a hang guard only

// ---- the page, and the library's numbers as the program printed them ---------------------------
mkdirSync(work, { recursive: true });
const page = resolve(join(work, "step.html"));
const printed = execFileSync(program, ["--out", page], {
  env: { ...process.env, OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1", TAPEGRAD_QUIET_BLAS: "1" },
}).toString();
const library = [...printed.matchAll(/^step (\d+)  loss (\S+)  pe fingerprint (0x[0-9a-f]{16})$/gm)]
  .map((m) => ({ step: Number(m[1]), loss: m[2] === "-" ? null : Number(m[2]), pe: m[3] }));
const html = readFileSync(page, "utf8");
const DATA = JSON.parse(html.match(/<script id="tape-data" type="application\/json">([^]*?)<\/script>/)[1]);
check(library.length === DATA.steps.length, `the program printed ${library.length} steps, the page has ${DATA.steps.length}`);

// ---- a WebDriver client: a few endpoints of the W3C protocol ------------------------------------
const port = await new Promise((done) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => done(port));
  });
});
const driver = spawn(CHROMEDRIVER, [`--port=${port}`], { stdio: "ignore" });
const base = `http://127.0.0.1:${port}`;
let session = null;
async function wd(method, path, body) {
  const response = await fetch(base + (session && path.startsWith("/") ? `/session/${session}${path}` : path),
                               { method, headers: { "Content-Type": "application/json" },
                                 body: body === undefined ? undefined : JSON.stringify(body) });
  const reply = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${JSON.stringify(reply.value)}`);
  return reply.value;
}
const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";
const find = async (css) => (await wd("POST", "/element", { using: "css selector", value: css }))[ELEMENT];
const click = async (css) => wd("POST", `/element/${await find(css)}/click`, {});
const text = async (css) => wd("GET", `/element/${await find(css)}/text`);
// The exact values of the cells under `css` (data-value), and the numbers their text shows.
const cells = (css) => wd("POST", "/execute/sync", {
  script: "return [...document.querySelectorAll(arguments[0])].map((e) => [e.dataset.value, e.textContent]);",
  args: [css] });

// A shown value matches the data: the exact one in data-value, the visible text rounded from it.
function sameValues(shown, expected, what) {
  check(shown.length === expected.length, `${what}: ${shown.length} cells shown, ${expected.length} expected`);
  shown.forEach(([exact, visible], i) => {
    const want = expected[i] === null ? NaN : expected[i];
    if (!(Object.is(Number(exact), want) || (Number.isNaN(want) && exact === "null")))
      failures.push(`${what}[${i}]: shown ${exact}, expected ${want}`);
    if (Math.abs(Number(visible) - want) > 0.051 * Math.abs(want) + 1e-3)
      failures.push(`${what}[${i}]: the text ${visible} does not round ${want}`);
  });
}

async function finish(error) {
  clearTimeout(guard);
  if (error) failures.push(String(error));
  // Ending the session is what makes chromedriver quit Chromium (DELETE /session/{id}: no trailing
  // slash, which chromedriver would answer with "unknown command" and leave the browser running).
  try { if (session) await fetch(`${base}/session/${session}`, { method: "DELETE" }); } catch { /* gone */ }
  driver.kill();
  if (failures.length) {
    console.log(`the tape explorer's page: ${failures.length} failures\n  ` + failures.slice(0, 30).join("\n  "));
    process.exit(1);
  }
  console.log(`the tape explorer's page: ${DATA.replay.length} backward steps and ${DATA.steps.length - 1} ` +
              "optimizer steps clicked through; every value shown is the library's");
  process.exit(0);
}

try {
  for (let i = 0; ; ++i) {  // chromedriver answers once it listens
    try { if ((await wd("GET", "/status")).ready) break; } catch { /* not yet */ }
    if (i === 100) throw new Error("chromedriver did not start within 10 s");
    await new Promise((done) => setTimeout(done, 100));
  }
  const profile = mkdtempSync(join(resolve(work), "chromium-profile-"));
  session = (await wd("POST", "/session", { capabilities: { alwaysMatch: { "goog:chromeOptions": {
    binary: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           `--user-data-dir=${profile}`, "--window-size=1150,1000"] } } } })).sessionId;
  await wd("POST", "/url", { url: "file://" + page });

  // ---- the whole backward, one click at a time --------------------------------------------------
  check((await text("#position")).startsWith("0 /"), "the replay does not start at 0");
  for (let k = 0; k < DATA.replay.length; ++k) {
    await click("#next");
    const step = DATA.replay[k], entry = DATA.entries.find((e) => e.seq === step.seq);
    const where = `backward step ${k + 1} (#${step.seq} ${step.op})`;
    check((await text("#replay-entry")).startsWith(`#${step.seq} ${step.op}`), `${where}: wrong entry shown`);
    // The formula shown is the source file's comment, line for line.
    const lines = readFileSync(join(sourceDir, entry.formula.file), "utf8").split("\n");
    const shown = (await text("#replay pre.source")).split("\n");
    entry.formula.lines.forEach((_, i) => {
      const line = entry.formula.line + i;
      const expected = `${String(line).padStart(4)}  ${lines[line - 1].trim()}`;
      check(shown[i] !== undefined && shown[i].trimEnd() === expected.trimEnd(), `${where}: formula line ${line} shown as '${shown[i]}', the file has '${expected}'`);
    });
    sameValues(await cells("#replay-grad-output td"), step.grad_output.data, `${where}: d(output)`);
    for (const added of step.added) {
      sameValues(await cells(`.replay-added[data-tensor="${added.tensor}"] td`), added.grad.data, `${where}: added into ${added.tensor}`);
      if (DATA.tensors[added.tensor].label === "embed.lut.weight") {
        check((await text("#padding-verdict")) === "exactly 0 in every column", `${where}: the padding row is not shown as zero`);
        const d = added.grad.shape[1];
        const row = (await cells(`.replay-added[data-tensor="${added.tensor}"] tr:first-child td`)).slice(0, d);
        check(row.length === d && row.every(([exact]) => Number(exact) === 0), `${where}: padding row cells not 0`);
      }
    }
  }
  check((await text("#position")).startsWith(`${DATA.replay.length} /`), "the replay did not reach its end");
  if (screenshot) {  // the tape with the backward finished, for the docs
    await wd("POST", "/execute/sync", { script: "document.querySelector('h2:nth-of-type(2)').scrollIntoView();", args: [] });
    writeFileSync(screenshot, Buffer.from(await wd("GET", "/screenshot"), "base64"));
  }

  // ---- the slider, step by step with the arrow key ----------------------------------------------
  const slider = await find("#step-slider");
  for (let s = 1; s < DATA.steps.length; ++s) {
    await wd("POST", `/element/${slider}/value`, { text: "\uE014" });  // ArrowRight
    const where = `slider at step ${s}`;
    const [[loss]] = await cells("#loss-at-step");
    check(Math.fround(Number(loss)) === Math.fround(library[s].loss), `${where}: loss shown ${loss}, the library printed ${library[s].loss}`);
    check((await text("#pe-at-step")) === library[s].pe, `${where}: pe fingerprint differs from the library's`);
    check((await text("#pe-verdict")) === "the same bits as at step 0", `${where}: pe not shown unchanged`);
    sameValues(await cells("#weight-at-step td"), DATA.steps[s].weight.data, `${where}: embed.lut.weight`);
    const row = 1, d = DATA.model.d_model;  // the row shown first: A1
    sameValues(await cells("#adam-m td"), DATA.steps[s].m.data.slice(row * d, (row + 1) * d), `${where}: m`);
    sameValues(await cells("#adam-v td"), DATA.steps[s].v.data.slice(row * d, (row + 1) * d), `${where}: v`);
  }
  await click(`#adam-row option[value="${DATA.model.padding_idx}"]`);
  const zero = (c) => c.length === DATA.model.d_model && c.every(([exact]) => Number(exact) === 0);
  check(zero(await cells("#adam-m td")) && zero(await cells("#adam-v td")), "the <pad> row's m and v are not shown as zero");
  rmSync(profile, { recursive: true, force: true });
  await finish();
} catch (error) {
  await finish(error);
}
