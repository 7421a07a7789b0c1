// The live-caption page (GET /) in Debian's chromium, driven headless by playwright-core, its
// microphone a fake device playing a WAV: Start, listen for the file's length, Stop, and the page's
// captions must be the engine's transcript of the audio the page sent (checked by the calling
// script against `voxrt transcribe`). Writes that audio (sent.wav), what the page showed
// (captions.json) and a screenshot into OUT_DIR.
//   [PAGE_API_KEY=KEY] node caption_page.cjs CLIENTS_DIR PAGE_URL AUDIO_WAV SECONDS DELAY_MS OUT_DIR
const fs = require('fs');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');

const [clientsDir, pageUrl, audio, seconds, delay, outDir] = process.argv.slice(2);
const { chromium } = createRequire(path.join(clientsDir, 'package.json'))('playwright-core');

// A 16 kHz mono PCM16 WAV of these samples.
function wav(samples) {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8);
  h.write('fmt ', 12); h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22);
  h.writeUInt32LE(16000, 24); h.writeUInt32LE(32000, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
           `--use-file-for-fake-audio-capture=${path.resolve(audio)}`, '--autoplay-policy=no-user-gesture-required',
           '--no-sandbox'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 520 } });
    page.on('pageerror', (e) => { throw e; });
    await page.goto(pageUrl);
    const key = process.env.PAGE_API_KEY;
    if (key) {
      // A server with --api-key: the page asks for the key (from /health) and sends it as a
      // subprotocol; a wrong one is refused and said so, then the right one is taken.
      await page.waitForSelector('#key-label', { state: 'visible', timeout: 10000 });
      await page.fill('#key', 'wrong-' + key);
      await page.click('#start');
      await page.waitForFunction(() => /refused/.test(document.getElementById('status').textContent), null, { timeout: 20000 });
      await page.fill('#key', key);
    } else {
      assert.equal(await page.isHidden('#key-label'), true, 'no key field when the server needs none');
    }
    await page.selectOption('#delay', String(delay));
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('status').textContent === 'listening', null, { timeout: 20000 });
    await page.waitForTimeout(Number(seconds) * 1000);
    await page.click('#stop');
    await page.waitForFunction(() => window.voxrtCaptions.done !== null, null, { timeout: 60000 });
    await page.waitForTimeout(2500);  // the load line refreshes
    await page.screenshot({ path: path.join(outDir, 'screenshot.png') });
    const got = await page.evaluate(() => ({
      text: window.voxrtCaptions.text, done: window.voxrtCaptions.done,
      shown: document.getElementById('captions').textContent, status: document.getElementById('status').textContent,
      load: document.getElementById('load').textContent,
      sent: window.voxrtCaptions.sent.map((c) => Array.from(c)),
    }));
    assert.equal(got.status, 'done');
    assert.equal(got.shown, got.text, 'the page shows the deltas it received');
    assert.equal(got.text.trim(), got.done, 'the deltas add up to the done text');
    assert.match(got.load, /^server: \d+ sessions, margin -?\d+ ms$/);
    const samples = Int16Array.from(got.sent.flat());
    assert.ok(samples.length > 16000 * Number(seconds) * 0.5, `the page sent ${samples.length} samples`);
    fs.writeFileSync(path.join(outDir, 'sent.wav'), wav(samples));
    fs.writeFileSync(path.join(outDir, 'captions.json'), JSON.stringify({ text: got.done, shown: got.shown, load: got.load }));
    console.log(`caption page: ${(samples.length / 16000).toFixed(2)} s heard through the fake microphone; captions "${got.done.slice(0, 60)}..."`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => { console.error('caption page: FAILED:', e); process.exit(1); });
