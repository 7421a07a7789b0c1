// A vLLM realtime client written with the `ws` npm package, as vLLM's own examples are, against
// `voxrt serve`'s /v1/realtime (scripts/test_clients.sh): session.created, session.update (with
// voxrt's delay_ms), a commit, the file's PCM16 in 100 ms appends, the final commit, and the text of
// transcription.done and of the deltas equal to `voxrt transcribe` on the same file.
//   node vllm_realtime.cjs CLIENTS_DIR WS_URL API_KEY AUDIO_16K_PCM16_WAV EXPECTED_DIR DELAY_MS
'use strict';
const fs = require('fs');
const { pcm16 } = require('./wav_pcm16.cjs');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');

const [clientsDir, url, apiKey, audio, expectedDir, delayArg] = process.argv.slice(2);
const WebSocket = createRequire(path.join(clientsDir, 'package.json'))('ws');
const stem = path.basename(audio, path.extname(audio));
const expected = JSON.parse(fs.readFileSync(path.join(expectedDir, `${stem}.json`), 'utf8'));


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
  for (;;) {
    const e = await next();
    if (e.type === 'transcription.delta') { deltas += e.delta; continue; }
    assert.equal(e.type, 'transcription.done', JSON.stringify(e));
    assert.equal(e.text, expected.text, 'transcription.done text');
    assert.equal(deltas.trimStart(), expected.text, 'the deltas add up to the text');
    break;
  }
  ws.close();
  console.log(`vllm realtime (ws): ${stem} at ${delayArg} ms: the deltas and transcription.done as voxrt transcribe`);
}

main().catch((e) => {
  console.error(`vllm realtime (ws): FAILED: ${e.stack || e}`);
  process.exit(1);
});
