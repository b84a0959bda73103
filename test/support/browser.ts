// Headless Chromium for the tests that look at a page as a person would:
// Debian's `chromium` driven by puppeteer-core (nothing downloads a browser).
// A missing chromium fails at once with one line naming the package.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { requireTool } from './tools.js';

export const CHROMIUM = '/usr/bin/chromium';

export interface HeadlessBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** Launches headless Chromium with a fresh profile, no sandbox, no GPU and no background traffic. */
export async function launchChromium(): Promise<HeadlessBrowser> {
  requireTool('chromium');
  const profile = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
    timeout: 30_000,
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface OpenedPage {
  page: Page;
  /** every request the page made other than for the file itself (each one refused) */
  otherRequests: string[];
}

/** Opens `file` (an HTML file) at the given viewport, refusing and recording every other request. */
export async function openFile(b: HeadlessBrowser, file: string, viewport: { width: number; height: number }): Promise<OpenedPage> {
  const page = await b.browser.newPage();
  await page.setViewport(viewport);
  const url = pathToFileURL(file).href;
  const otherRequests: string[] = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (req.url() === url) void req.continue();
    else {
      otherRequests.push(req.url());
      void req.abort();
    }
  });
  await page.goto(url, { waitUntil: 'load', timeout: 15_000 });
  return { page, otherRequests };
}

/**
 * Runs `expression` (JavaScript, as text: this project compiles without the DOM's
 * types) in the page and returns its value.
 */
export async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

/** What makes a layout broken at this width: the page scrolls sideways, or elements stick out past its right edge. */
export async function overflow(page: Page): Promise<{ scrollWidth: number; innerWidth: number; sticking: string[] }> {
  return inPage(
    page,
    `(() => {
      const innerWidth = window.innerWidth;
      const sticking = [];
      for (const el of document.body.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > innerWidth + 0.5) {
          const cls = el.getAttribute('class');
          sticking.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (cls ? '.' + cls.split(' ').join('.') : '') + ' (right ' + Math.round(r.right) + ')');
        }
      }
      return { scrollWidth: document.documentElement.scrollWidth, innerWidth, sticking };
    })()`,
  );
}
