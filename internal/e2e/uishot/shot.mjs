// Renders one page of the Temporal UI in headless Chromium and saves a PNG.
// The operator's saved views and list columns are put in the browser's
// local storage first, as the UI itself would have stored them.
//
// usage: node shot.mjs URL OUT.png NAMESPACE COLUMNS_JSON SAVED_VIEWS_JSON [VIEW]
// With VIEW, the saved view of that name is opened (clicked) first.
import { chromium } from "playwright-core";

const [url, out, namespace, columns, views, view] = process.argv.slice(2);
if (!url || !out || !namespace || !columns || !views) {
  console.error("usage: node shot.mjs URL OUT.png NAMESPACE COLUMNS_JSON SAVED_VIEWS_JSON");
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
  const page = await browser.newPage({ viewport: { width: 1600, height: 640 } });
  await page.addInitScript((entries) => {
    for (const [key, value] of Object.entries(entries)) {
      window.localStorage.setItem(key, JSON.stringify(value));
    }
  }, storage);
  await page.goto(url, { waitUntil: "networkidle" });
  if (view) {
    await page.getByText(view, { exact: true }).first().click();
    await page.waitForLoadState("networkidle");
  }
  await page.screenshot({ path: out });
} finally {
  await browser.close();
}
