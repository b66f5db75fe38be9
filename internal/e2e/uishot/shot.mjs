// Renders one page of the Temporal UI in headless Chromium and saves a PNG.
// The operator's saved views and list columns are put in the browser's
// local storage first, as the UI itself would have stored them.
//
// usage: node shot.mjs URL OUT.png NAMESPACE COLUMNS_JSON SAVED_VIEWS_JSON TEXT
// The picture is taken once TEXT shows on the page and the page has been
// quiet for a moment (a running workflow's page long-polls its history, so
// the network is never idle there).
import { chromium } from "playwright-core";

const [url, out, namespace, columns, views, text] = process.argv.slice(2);
if (!url || !out || !namespace || !columns || !views || !text) {
  console.error("usage: node shot.mjs URL OUT.png NAMESPACE COLUMNS_JSON SAVED_VIEWS_JSON TEXT");
  process.exit(2);
}
const storage = {
  "namespace-workflow-table-columns": { [namespace]: JSON.parse(columns) },
  "saved-workflow-queries": { [namespace]: JSON.parse(views) },
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 760 } });
  await page.addInitScript((entries) => {
    for (const [key, value] of Object.entries(entries)) {
      window.localStorage.setItem(key, JSON.stringify(value));
    }
  }, storage);
  // What went wrong, when the text never shows: the page's console
  // errors and every answer that was not a success.
  const trouble = [];
  page.on("console", (m) => { if (m.type() === "error") trouble.push(`console: ${m.text()}`); });
  page.on("response", (r) => { if (r.status() >= 400) trouble.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  page.on("requestfailed", (r) => trouble.push(`failed ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  await page.goto(url, { waitUntil: "load" });
  try {
    await page.getByText(text, { exact: false }).first().waitFor({ timeout: 30000 });
  } catch (err) {
    await page.screenshot({ path: out }).catch(() => {});
    console.error(`the page never showed ${text} (its picture is in ${out}); what it met:\n${trouble.join("\n")}`);
    throw err;
  }
  await page.waitForLoadState("networkidle", { timeout: 3000 }).catch(() => {});
  await page.screenshot({ path: out });
} finally {
  await browser.close();
}
