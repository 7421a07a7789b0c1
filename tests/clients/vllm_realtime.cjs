// A vLLM realtime client written with the `ws` npm package, as vLLM's own examples are, against
// `voxrt serve`'s /v1/realtime (scripts/test_clients.sh): session.created, session.update (with
// voxrt's delay_ms), a commit, the file's PCM16 in 100 ms appends, the final commit, and the text of
// transcription.done and of the deltas, transcription.done's segments (each with its words) and
// words, and the words the deltas carried (every word but the last, which only the done event can
// end) equal to `voxrt transcribe` on the same file. segments and words are voxrt's extension
// fields (docs/serve.md).
//   node vllm_realtime.cjs CLIENTS_DIR WS_URL API_KEY AUDIO_16K_PCM16_WAV EXPECTED_DIR DELAY_MS
'use strict';
const { pcm16 } = require('./wav_pcm16.cjs');
const { loadExpected, expectedWords, sameWords, sameSegments } = require('./expected.cjs');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');

const [clientsDir, url, apiKey, audio, expectedDir, delayArg] = process.argv.slice(2);
const WebSocket = createRequire(path.join(clientsDir, 'package.json'))('ws');
const { stem, expected } = loadExpected(expectedDir, audio);


async function main() {
  const samples = pcm16(audio, 16000);
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${apiKey}` } });
  const events = [];
  let wake = null;
  ws.on('message', (data) => { events.push(JSON.parse(data.toString())); if (wake) wake(); });
  const next = async () => {
    while (events.length === 0) await new Promise((r) => { wake = r; });
    return events.shift();
  };
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  assert.equal((await next()).type, 'session.created');
  ws.send(JSON.stringify({ type: 'session.update', model: 'mistralai/Voxtral-Mini-4B-Realtime-2602', delay_ms: Number(delayArg) }));
  ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  for (let at = 0; at < samples.length; at += 3200)
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: samples.subarray(at, at + 3200).toString('base64') }));
  ws.send(JSON.stringify({ type: 'input_audio_buffer.commit', final: true }));
  let deltas = '';
  const deltaWords = [];
  for (;;) {
    const e = await next();
    if (e.type === 'transcription.delta') {
      deltas += e.delta;
      if (e.words !== undefined) deltaWords.push(...e.words);
      continue;
    }
    assert.equal(e.type, 'transcription.done', JSON.stringify(e));
    assert.equal(e.text, expected.text, 'transcription.done text');
    assert.equal(deltas, expected.text, 'the deltas add up to the text');
    sameSegments(e.segments, expected.segments, 'transcription.done segment', { withWords: true });
    const words = expectedWords(expected);
    sameWords(e.words, words, 'transcription.done word');
    sameWords(deltaWords, words.slice(0, deltaWords.length), 'transcription.delta word');
    assert.ok(deltaWords.length >= words.length - 1, `the deltas ended ${deltaWords.length} of ${words.length} words`);
    break;
  }
  ws.close();
  console.log(`vllm realtime (ws): ${stem} at ${delayArg} ms: the deltas (and their ${deltaWords.length} words) and ` +
              `transcription.done (text, ${expected.segments.length} segments, ${expectedWords(expected).length} words) as voxrt transcribe`);
}

main().catch((e) => {
  console.error(`vllm realtime (ws): FAILED: ${e.stack || e}`);
  process.exit(1);
});
