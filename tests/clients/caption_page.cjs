// The live-caption page (GET /) in Debian's chromium, driven headless by playwright-core, its
// microphone a fake device playing a WAV. One check per run:
//   captions SECONDS DELAY_MS: Start, listen for SECONDS, Stop; the page's captions must be the
//     engine's transcript of the audio the page sent (checked by the calling script against `voxrt
//     transcribe`), at the rate the page's AudioContext runs and the server confirmed. Writes that
//     audio (sent.wav, at that rate), what the page showed (captions.json) and a screenshot.
//   turns SECONDS: the same with "turns" ticked: a paragraph per turn, each the text of the server's
//     transcription.turn.done (checked by the calling script against `voxrt stream --turns` of the
//     audio sent). Writes sent.wav and turns.json.
//   start-fails: the worklet does not load (after the microphone was granted).
//   no-mediadevices: a page without navigator.mediaDevices, as over plain http from another machine.
//   server-stops PID SIGNAL: the server is sent SIGNAL mid-session.
// After each, the page must have let the microphone and its AudioContext go and say why.
//   [PAGE_API_KEY=KEY] node caption_page.cjs CLIENTS_DIR PAGE_URL AUDIO_WAV OUT_DIR CHECK [ARGS...]
const fs = require('fs');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');

const [clientsDir, pageUrl, audio, outDir, check, ...args] = process.argv.slice(2);
const { chromium } = createRequire(path.join(clientsDir, 'package.json'))('playwright-core');

// A mono PCM16 WAV of these samples.
function wav(samples, rate) {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8);
  h.write('fmt ', 12); h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24); h.writeUInt32LE(2 * rate, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

// Keeps what the page opened, to see afterwards that it let them go.
function trackMicrophoneAndAudio() {
  const opened = { streams: [], contexts: [] };
  window.pageTest = opened;
  if (navigator.mediaDevices) {
    const getUserMedia = MediaDevices.prototype.getUserMedia;
    MediaDevices.prototype.getUserMedia = async function (c) {
      const stream = await getUserMedia.call(this, c);
      opened.streams.push(stream);
      return stream;
    };
  }
  window.AudioContext = class extends window.AudioContext {
    constructor(o) { super(o); opened.contexts.push(this); }
  };
}

const status = (page) => page.textContent('#status');

// The microphone's tracks ended, the contexts closed, Start ready again, the status matching `want`.
async function released(page, want) {
  await page.waitForFunction(() => {
    const t = window.pageTest;
    return t.streams.every((s) => s.getTracks().every((k) => k.readyState === 'ended')) &&
        t.contexts.every((c) => c.state === 'closed') && !document.getElementById('start').disabled;
  }, null, { timeout: 20000 }).catch(async () => {
    throw new Error(`the page kept the microphone or its AudioContext, or Start disabled (status "${await status(page)}")`);
  });
  assert.match(await status(page), want);
  assert.equal(await page.isDisabled('#stop'), true, 'Stop disabled');
}

async function listening(page) {
  await page.click('#start');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'listening', null, { timeout: 20000 })
    .catch(async () => { throw new Error(`the page is not listening: "${await status(page)}"`); });
}

const checks = {
  captions: { async run(page, seconds, delay) {
    const key = process.env.PAGE_API_KEY;
    if (key) {
      // A server with --api-key: the page asks for the key (from /health) and sends it as a
      // subprotocol; a wrong one is refused and said so, then the right one is taken.
      await page.waitForSelector('#key-label', { state: 'visible', timeout: 10000 });
      await page.fill('#key', 'wrong-' + key);
      await page.click('#start');
      await released(page, /refused/);
      await page.fill('#key', key);
    } else {
      assert.equal(await page.isHidden('#key-label'), true, 'no key field when the server needs none');
    }
    await page.selectOption('#delay', String(delay));
    await listening(page);
    await page.waitForTimeout(Number(seconds) * 1000);
    await page.click('#stop');
    await page.waitForFunction(() => window.voxrtCaptions.done !== null, null, { timeout: 60000 });
    await released(page, /^done$/);
    await page.waitForTimeout(2500);  // the load line refreshes
    await page.screenshot({ path: path.join(outDir, 'screenshot.png') });
    const got = await page.evaluate(() => ({
      text: window.voxrtCaptions.text, done: window.voxrtCaptions.done, rate: window.voxrtCaptions.rate,
      contextRate: window.pageTest.contexts.at(-1).sampleRate,
      shown: document.getElementById('captions').textContent, load: document.getElementById('load').textContent,
      sent: window.voxrtCaptions.sent.map((c) => Array.from(c)),
    }));
    assert.equal(got.rate, got.contextRate, 'the server takes the audio at the rate of the page\'s AudioContext');
    assert.notEqual(got.rate, 16000, 'the rate differs from the model\'s (else this checks no resampling)');
    assert.equal(got.shown, got.text.trimStart(), 'the page shows the deltas it received, the line not indented');
    assert.equal(got.text.trim(), got.done, 'the deltas add up to the done text');
    assert.match(got.load, /^server: \d+ sessions, margin -?\d+ ms$/);
    const samples = Int16Array.from(got.sent.flat());
    assert.ok(samples.length > got.rate * Number(seconds) * 0.5, `the page sent ${samples.length} samples at ${got.rate} Hz`);
    fs.writeFileSync(path.join(outDir, 'sent.wav'), wav(samples, got.rate));
    fs.writeFileSync(path.join(outDir, 'captions.json'), JSON.stringify({ text: got.done, shown: got.shown, load: got.load }));
    const first = JSON.stringify(got.text.slice(0, 12));
    return `${(samples.length / got.rate).toFixed(2)} s sent at ${got.rate} Hz (the AudioContext's rate, ` +
        `confirmed by the server), the first delta ${first}... shown unindented`;
  } },
  turns: { async run(page, seconds) {
    await page.check('#turns');
    await listening(page);
    await page.waitForTimeout(Number(seconds) * 1000);
    await page.click('#stop');
    await page.waitForFunction(() => window.voxrtCaptions.done !== null, null, { timeout: 60000 });
    await released(page, /^done$/);
    const got = await page.evaluate(() => ({
      turns: window.voxrtCaptions.turns, rate: window.voxrtCaptions.rate,
      paragraphs: Array.from(document.querySelectorAll('#captions p'), (p) => [p.textContent, p.className]),
      sent: window.voxrtCaptions.sent.map((c) => Array.from(c)),
    }));
    assert.ok(got.turns.length >= 2, `turns found: ${JSON.stringify(got.turns)}`);
    assert.deepEqual(got.paragraphs, got.turns.filter((t) => t).map((t) => [t, 'final']),
                     'a paragraph per turn with words, each the turn\'s final text');
    const samples = Int16Array.from(got.sent.flat());
    fs.writeFileSync(path.join(outDir, 'sent.wav'), wav(samples, got.rate));
    fs.writeFileSync(path.join(outDir, 'turns.json'), JSON.stringify(got.turns));
    return `${(samples.length / got.rate).toFixed(2)} s sent at ${got.rate} Hz, ${got.turns.length} turns, a paragraph each`;
  } },
  'start-fails': {
    init: () => { AudioWorklet.prototype.addModule = () => Promise.reject(new Error('the worklet did not load (test)')); },
    async run(page) {
      await page.click('#start');
      await released(page, /^error: the worklet did not load \(test\)$/);
      return 'an error in start() after the microphone was granted: microphone and AudioContext let go, the error shown';
    },
  },
  'no-mediadevices': {
    init: () => { delete Navigator.prototype.mediaDevices; },
    async run(page) {
      await page.click('#start');
      await released(page, /^error: the microphone needs https or localhost/);
      return `no navigator.mediaDevices: "${await status(page)}"`;
    },
  },
  'server-stops': { async run(page, pid, signal) {
    await listening(page);
    // The session is under way: audio has gone to the server.
    await page.waitForFunction(() => window.voxrtCaptions.sent.length >= 3, null, { timeout: 20000 });
    process.kill(Number(pid), signal);
    // SIGTERM: the server ends the utterance (its done event) and closes; SIGKILL: the socket drops.
    await released(page, signal === 'SIGTERM' ? /^the server ended the session$/ : /^the connection to the server was lost$/);
    return `${signal} to the server mid-session: microphone and AudioContext let go, "${await status(page)}"`;
  } },
};

async function main() {
  assert.ok(checks[check], `no check "${check}"`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
           `--use-file-for-fake-audio-capture=${path.resolve(audio)}`, '--autoplay-policy=no-user-gesture-required',
           '--no-sandbox'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 520 } });
    page.on('pageerror', (e) => { throw e; });
    if (checks[check].init) await page.addInitScript(checks[check].init);
    await page.addInitScript(trackMicrophoneAndAudio);
    await page.goto(pageUrl);
    assert.equal(await page.getAttribute('#status', 'aria-live'), 'polite', 'the status is read out as it changes');
    console.log(`caption page (chromium), ${check}: ${await checks[check].run(page, ...args)}`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => { console.error(`caption page: ${check}: FAILED:`, e); process.exit(1); });
