// The official `openai` npm package's realtime client (OpenAIRealtimeWS, openai/realtime/ws) in a
// transcription session against `voxrt serve`'s /v1/realtime?intent=transcription
// (scripts/test_clients.sh): session.update (audio/pcm at 24 kHz, the named delay, no turn
// detection), the file's PCM16 in 100 ms appends, a commit, and the transcript of
// conversation.item.input_audio_transcription.completed, of its deltas, and its segments (voxrt's
// extension) equal to `voxrt transcribe` on the same 24 kHz file (the server resamples to 16 kHz
// as voxrt's file reader does).
// The one change to the client: OpenAIRealtimeWS always connects to wss:// (it sets the URL's
// protocol itself), and voxrt serves plain TCP (deployments terminate TLS in front of it,
// docs/deploy.md), so the test hands `ws` a plain TCP connection through the client's own `options`
// (passed to the ws.WebSocket constructor): createConnection, as ws's own netConnect does.
//   node openai_realtime.cjs CLIENTS_DIR BASE_URL API_KEY AUDIO_24K_PCM16_WAV EXPECTED_DIR DELAY_MS
'use strict';
const { pcm16 } = require('./wav_pcm16.cjs');
const net = require('net');
const path = require('path');
const assert = require('assert/strict');
const { createRequire } = require('module');
const { ms, loadExpected, sameSegments } = require('./expected.cjs');

const [clientsDir, baseURL, apiKey, audio, expectedDir, delayArg] = process.argv.slice(2);
const requireClient = createRequire(path.join(clientsDir, 'package.json'));
const OpenAI = requireClient('openai');
const { OpenAIRealtimeWS } = requireClient('openai/realtime/ws');
const delay = Number(delayArg);
const delayName = { 480: 'medium', 960: 'high' }[delay];  // OpenAI's names for voxrt's delays (docs/serve.md)
const { stem, expected } = loadExpected(expectedDir, audio);


async function main() {
  assert.ok(delayName, `a delay OpenAI names: 480 or 960, not ${delayArg}`);
  const samples = pcm16(audio, 24000);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({
    intent: 'transcription',
    options: { createConnection: (options) => net.connect({ ...options, path: undefined }) },
  }, client);
  const events = [];
  let wake = null;
  const push = (e) => { events.push(e); if (wake) wake(); };
  rt.on('event', push);  // every event the client parsed, error events included
  rt.on('error', (e) => { if (!e.error) push({ type: 'client error', message: e.message }); });
  rt.socket.on('close', () => push({ type: 'socket closed' }));
  const next = async () => {
    while (events.length === 0) await new Promise((r) => { wake = r; });
    return events.shift();
  };

  await new Promise((resolve, reject) => { rt.socket.on('open', resolve); rt.socket.on('error', reject); });
  rt.send({ type: 'session.update', session: { type: 'transcription', audio: { input: {
    format: { type: 'audio/pcm', rate: 24000 },
    transcription: { model: 'voxtral', delay: delayName },
    turn_detection: null } } } });
  for (let at = 0; at < samples.length; at += 4800)
    rt.send({ type: 'input_audio_buffer.append', audio: samples.subarray(at, at + 4800).toString('base64') });
  rt.send({ type: 'input_audio_buffer.commit' });

  const created = await next();
  assert.equal(created.type, 'session.created', JSON.stringify(created));
  assert.equal(created.session.type, 'transcription', 'session.created: a transcription session');
  const updated = await next();
  assert.equal(updated.type, 'session.updated', JSON.stringify(updated));
  const input = updated.session.audio.input;
  assert.deepEqual(input.format, { type: 'audio/pcm', rate: 24000 }, 'session.updated: format');
  assert.equal(input.transcription.delay, delayName, 'session.updated: delay');
  assert.equal(input.transcription.delay_ms, delay, 'session.updated: delay_ms');
  assert.equal(input.turn_detection, null, 'session.updated: no turn detection');

  let committed = null;
  const seen = [];
  let deltas = '';
  for (;;) {
    const e = await next();
    seen.push(e.type);
    if (e.type === 'conversation.item.input_audio_transcription.delta') {
      deltas += e.delta;
      if (committed) assert.equal(e.item_id, committed.item_id, 'the delta\'s item');
      continue;
    }
    if (e.type === 'input_audio_buffer.committed') { committed = e; continue; }
    if (e.type === 'conversation.item.added' || e.type === 'conversation.item.done') {
      assert.ok(committed, `${e.type} after input_audio_buffer.committed`);
      assert.equal(e.item.id, committed.item_id, `${e.type}: the committed item`);
      continue;
    }
    assert.equal(e.type, 'conversation.item.input_audio_transcription.completed', JSON.stringify(e));
    assert.ok(committed, 'input_audio_buffer.committed');
    assert.equal(committed.previous_item_id, null, 'the first item has no previous one');
    assert.ok(seen.includes('conversation.item.added') && seen.includes('conversation.item.done'), 'the item added and done');
    assert.equal(e.item_id, committed.item_id, 'completed: the committed item');
    assert.equal(e.transcript, expected.text, 'completed: transcript');
    assert.equal(deltas, expected.text, 'the deltas add up to the transcript');
    assert.equal(e.usage.type, 'duration', 'usage: duration');
    assert.equal(ms(e.usage.seconds), ms(expected.duration), 'usage: seconds');
    sameSegments(e.segments, expected.segments, 'segment');
    break;
  }
  rt.close();
  console.log(`openai realtime (OpenAIRealtimeWS): ${stem} (24 kHz) at ${delayName} (${delay} ms): the deltas, ` +
              `the completed transcript and its ${expected.segments.length} segments as voxrt transcribe`);
}

main().catch((e) => {
  console.error(`openai realtime (OpenAIRealtimeWS): FAILED: ${e.stack || e}`);
  process.exit(1);
});
