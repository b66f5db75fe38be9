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

// waitForText waits until text is visible in the page or in one of its
// frames: the UI renders a workflow's summary and details (Markdown) in a
// sandboxed iframe, which the page's own locators do not search.
async function waitForText(page, text, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      if (await frame.getByText(text, { exact: false }).first().isVisible().catch(() => false)) {
        return;
      }
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${JSON.stringify(text)} in the page and its frames`);
}

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
    await waitForText(page, text, 30000);
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
