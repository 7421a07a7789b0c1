// The official `openai` npm package against `voxrt serve` (scripts/test_clients.sh starts the
// server and writes what `voxrt transcribe` gives for the same file): every response format,
// word timestamps, streaming, the delay extension, a refused temperature and a wrong key.
//   node openai_transcriptions.cjs CLIENTS_DIR BASE_URL API_KEY AUDIO EXPECTED_DIR DELAY_MS
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');
const { loadExpected, expectedWords, sameWords, sameSegments } = require('./expected.cjs');

const [clientsDir, baseURL, apiKey, audio, expectedDir, delayArg] = process.argv.slice(2);
const OpenAI = createRequire(path.join(clientsDir, 'package.json'))('openai');
const delay = Number(delayArg);
const { stem, expected, expectedFile } = loadExpected(expectedDir, audio);

async function main() {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
  const ask = (extra) =>
    client.audio.transcriptions.create({ file: fs.createReadStream(audio), model: 'whisper-1', delay_ms: delay, ...extra });

  const json = await ask({ response_format: 'json' });
  assert.equal(json.text, expected.text, 'json: text');

  const text = await ask({ response_format: 'text' });
  assert.equal(String(text).trim(), expected.text, 'text');
  assert.equal(await ask({ response_format: 'srt' }), expectedFile('srt'), 'srt');
  assert.equal(await ask({ response_format: 'vtt' }), expectedFile('vtt'), 'vtt');

  const verbose = await ask({ response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
  assert.equal(verbose.text, expected.text, 'verbose_json: text');
  const words = expectedWords(expected);
  sameWords(verbose.words, words, 'verbose_json word');
  sameSegments(verbose.segments, expected.segments, 'verbose_json segment');

  const stream = await ask({ response_format: 'json', stream: true });
  let deltas = '';
  let done = null;
  for await (const event of stream) {
    if (event.type === 'transcript.text.delta') deltas += event.delta;
    if (event.type === 'transcript.text.done') done = event;
  }
  assert.ok(done, 'stream: a transcript.text.done event');
  assert.equal(done.text, expected.text, 'stream: done text');
  assert.equal(deltas, expected.text, 'stream: the deltas add up to the text');

  await assert.rejects(ask({ temperature: 0.5 }), (e) => e.status === 400 && /temperature/.test(e.message), 'temperature');
  const stranger = new OpenAI({ baseURL, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => e.status === 401, 'a wrong key');
  const models = await client.models.list();
  assert.equal(models.data.length, 1, 'one model listed');
  console.log(`openai client: ${stem} at ${delay} ms: json, text, srt, vtt, verbose_json (${words.length} words), ` +
              `stream, errors: all as voxrt transcribe`);
}

main().catch((e) => {
  console.error(`openai client: FAILED: ${e.stack || e}`);
  process.exit(1);
});
