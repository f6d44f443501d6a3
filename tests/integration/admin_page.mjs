// Drives /admin in headless Chromium (playwright-core, the system's /usr/bin/chromium).
// Usage: node admin_page.mjs BASE_URL TOKEN SCREENSHOT_PATH
// Prints one JSON object: what the page showed, unfiltered and filtered.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), "../npm/package.json"));
const { chromium } = require("playwright-core");

const [base, token, shot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const out = {};
  const anonymous = await browser.newContext();
  const denied = await anonymous.request.get(`${base}/admin`);
  out.withoutCredential = denied.status();
  await anonymous.close();

  // The admin token as a bearer credential on every request of the page (forms and links included).
  const context = await browser.newContext({ extraHTTPHeaders: { Authorization: `Bearer ${token}` },
                                             viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const resp = await page.goto(`${base}/admin`);
  out.status = resp.status();
  out.html = await page.content();
  out.text = await page.locator("body").innerText();
  const rows = async () => page.locator("#decisions tbody tr").evaluateAll((trs) =>
    trs.map((tr) => ({ server: tr.dataset.server, decision: tr.dataset.decision,
                       cells: [...tr.querySelectorAll("td")].map((td) => td.innerText) })));
  out.rows = await rows();
  out.servers = await page.locator("#servers tbody tr").evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.innerText)));
  out.chartBars = await page.locator("#chart rect").count();
  out.scriptTags = await page.locator("script").count();
  await page.screenshot({ path: shot, fullPage: true });

  await page.selectOption("select[name=decision]", "block");
  await Promise.all([page.waitForNavigation(), page.click("#filter button")]);
  out.filteredUrl = page.url();
  out.blockRows = await rows();
  await page.selectOption("select[name=decision]", "");
  await page.selectOption("select[name=server]", "other");
  await Promise.all([page.waitForNavigation(), page.click("#filter button")]);
  out.otherRows = await rows();
  out.otherChartBars = await page.locator("#chart rect").count();
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
