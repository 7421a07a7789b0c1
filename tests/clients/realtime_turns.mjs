// Turn detection through each realtime dialect's real client against `voxrt serve`
// (scripts/test_clients.sh), on the labelled set's meeting (six turns, tests/data/turns): every
// turn's events, times and text equal `voxrt stream --turns -f jsonl` on the same audio (its turn,
// speech_started and speech_stopped lines); the turns end while the audio is still arriving (it is
// all sent before anything is read).
//   - OpenAI's `openai` package (OpenAIRealtimeWS, intent transcription; a plain socket as in
//     openai_realtime.cjs): turn_detection server_vad, one item per turn (speech_started, deltas,
//     speech_stopped, committed, item added/done, completed); on a second connection a commit inside
//     a turn ends it at once (the expected cut: stream --turns of the first 3 s alone), then clear
//     inside a turn drops it (cleared, and no completed for it).
//   - Mistral's `@mistralai/mistralai` (RealtimeTranscription.connect, the session.update sent with
//     the connection's own JSON sender as mistral_realtime.mjs does): turn_detection {}, voxrt's
//     turn events as the SDK hands over unknown ones ({type, raw}), then transcription.done with
//     every turn's text.
//   - vLLM's protocol on `ws`: turn_detection in session.update (voxrt's extension), the final
//     commit, transcription.turn.done per turn, then transcription.done.
//   node realtime_turns.mjs CLIENTS_DIR SERVER_URL API_KEY WAV_16K WAV_24K WAV_24K_FIRST_3S EXPECTED_DIR
// EXPECTED_DIR holds stream --turns -f jsonl of each WAV, named after it with .jsonl.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const requireHere = createRequire(import.meta.url);
const { pcm16 } = requireHere('./wav_pcm16.cjs');

const [clientsDir, serverURL, apiKey, wav16, wav24, wav24cut, expectedDir] = process.argv.slice(2);
const requireClient = createRequire(path.join(clientsDir, 'package.json'));
const OpenAI = requireClient('openai');
const { OpenAIRealtimeWS } = requireClient('openai/realtime/ws');
const WebSocket = requireClient('ws');
const realtime = requireClient.resolve('@mistralai/mistralai/extra/realtime');
const { RealtimeTranscription } = await import(pathToFileURL(realtime).href);

// The turns `voxrt stream --turns -f jsonl` printed for `wav`: [{start_ms, end_ms, text}], and
// every turn's text joined (the done events' text).
function expectedTurns(wav) {
  const file = path.join(expectedDir, path.basename(wav, '.wav') + '.jsonl');
  const turns = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line);
    if (e.type === 'turn') turns.push({ start: e.start, end: e.end, text: e.text });
  }
  assert.ok(turns.length > 0, `${file}: no turns`);
  return { turns, text: turns.map((t) => t.text).filter((t) => t).join(' ') };
}
const ms = (seconds) => Math.round(seconds * 1000);

// Events in arrival order, awaited one at a time.
function eventQueue() {
  const events = [];
  let wake = null;
  return {
    push(e) { events.push(e); if (wake) wake(); },
    async next() {
      while (events.length === 0) await new Promise((r) => { wake = r; });
      return events.shift();
    },
  };
}

// ---- OpenAI ----

async function openaiConnection() {
  const client = new OpenAI({ baseURL: `${serverURL}/v1`, apiKey, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({
    intent: 'transcription',
    options: { createConnection: (options) => net.connect({ ...options, path: undefined }) },
  }, client);
  const q = eventQueue();
  rt.on('event', (e) => q.push(e));
  rt.on('error', (e) => { if (!e.error) q.push({ type: 'client error', message: e.message }); });
  rt.socket.on('close', () => q.push({ type: 'socket closed' }));
  await new Promise((resolve, reject) => { rt.socket.on('open', resolve); rt.socket.on('error', reject); });
  rt.send({ type: 'session.update', session: { type: 'transcription', audio: { input: {
    format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } } } });
  assert.equal((await q.next()).type, 'session.created');
  const updated = await q.next();
  assert.equal(updated.type, 'session.updated', JSON.stringify(updated));
  assert.equal(updated.session.audio.input.turn_detection.type, 'server_vad', 'session.updated: turn detection');
  return { rt, q };
}

function appendAll(rt, samples) {
  for (let at = 0; at < samples.length; at += 4800)
    rt.send({ type: 'input_audio_buffer.append', audio: samples.subarray(at, at + 4800).toString('base64') });
}

// One turn's events in their order; returns the completed event.
async function openaiTurn(q, want, label) {
  const started = await q.next();
  assert.equal(started.type, 'input_audio_buffer.speech_started', `${label}: ${JSON.stringify(started)}`);
  assert.equal(started.audio_start_ms, ms(want.start), `${label}: audio_start_ms`);
  const item = started.item_id;
  let deltas = '', stopped = false, committed = false;
  for (;;) {
    const e = await q.next();
    if (e.type === 'conversation.item.input_audio_transcription.delta') {
      assert.equal(e.item_id, item, `${label}: the delta's item`);
      deltas += e.delta;
    } else if (e.type === 'input_audio_buffer.speech_stopped') {
      assert.equal(e.audio_end_ms, ms(want.end), `${label}: audio_end_ms`);
      stopped = true;
    } else if (e.type === 'input_audio_buffer.committed') {
      assert.ok(stopped, `${label}: committed after speech_stopped`);
      assert.equal(e.item_id, item, `${label}: the committed item`);
      committed = true;
    } else if (e.type === 'conversation.item.added' || e.type === 'conversation.item.done') {
      assert.ok(committed && e.item.id === item, `${label}: ${e.type} of the committed item`);
    } else {
      assert.equal(e.type, 'conversation.item.input_audio_transcription.completed', `${label}: ${JSON.stringify(e)}`);
      assert.ok(committed, `${label}: completed after committed`);
      assert.equal(e.item_id, item, `${label}: completed: the turn's item`);
      assert.equal(e.transcript, want.text, `${label}: the turn's transcript`);
      assert.equal(deltas, want.text, `${label}: the turn's deltas add up to its transcript`);
      return e;
    }
  }
}

async function openai() {
  const whole = expectedTurns(wav24);
  const { rt, q } = await openaiConnection();
  appendAll(rt, pcm16(wav24, 24000));
  for (const [i, want] of whole.turns.entries()) await openaiTurn(q, want, `openai turn ${i}`);
  rt.close();

  // A commit inside a turn ends it now; clear inside a turn drops it.
  const cut = expectedTurns(wav24cut);
  assert.equal(cut.turns.length, 1, 'the first 3 s hold one (unfinished) turn');
  const second = await openaiConnection();
  const first3s = pcm16(wav24cut, 24000);
  appendAll(second.rt, first3s);
  second.rt.send({ type: 'input_audio_buffer.commit' });
  await openaiTurn(second.q, cut.turns[0], 'openai commit inside a turn');
  appendAll(second.rt, first3s);
  second.rt.send({ type: 'input_audio_buffer.clear' });
  // Then half a second of silence and a commit: between turns, the error input_audio_buffer_commit_empty,
  // which the server says after everything before it (the cleared turn's events included).
  appendAll(second.rt, Buffer.alloc(24000));
  second.rt.send({ type: 'input_audio_buffer.commit', event_id: 'evt_after_clear' });
  let cleared = false;
  for (;;) {
    const e = await second.q.next();
    if (e.type === 'error') {
      assert.equal(e.error.code, 'input_audio_buffer_commit_empty', JSON.stringify(e));
      assert.equal(e.error.event_id, 'evt_after_clear', JSON.stringify(e));
      break;
    }
    assert.ok(!cleared, `nothing of a cleared turn after input_audio_buffer.cleared: ${JSON.stringify(e)}`);
    if (e.type === 'input_audio_buffer.cleared') cleared = true;
    else assert.ok(['input_audio_buffer.speech_started', 'conversation.item.input_audio_transcription.delta'].includes(e.type),
      `before clear: ${JSON.stringify(e)}`);
  }
  assert.ok(cleared, 'input_audio_buffer.cleared');
  second.rt.close();
  console.log(`openai realtime (OpenAIRealtimeWS), server_vad: ${whole.turns.length} turns as voxrt stream --turns; ` +
              'a commit inside a turn ends it, clear drops one');
}

// ---- Mistral ----

async function mistral() {
  const want = expectedTurns(wav16);
  const client = new RealtimeTranscription({ apiKey, serverURL });
  const connection = await client.connect('voxtral-mini-transcribe-realtime-2602',
                                          { audioFormat: { encoding: 'pcm_s16le', sampleRate: 16000 } });
  await connection.sendJson({ type: 'session.update', session: { turn_detection: {} } });
  const samples = pcm16(wav16, 16000);
  for (let at = 0; at < samples.length; at += 3200) await connection.sendAudio(samples.subarray(at, at + 3200));
  await connection.endAudio();
  let turn = 0, deltas = '', updated = false;
  for await (const event of connection) {
    if (event.type === 'session.created') continue;
    if (event.type === 'session.updated') { updated = true; continue; }
    if (event.type === 'transcription.text.delta') { deltas += event.text; continue; }
    if (event.type === 'transcription.segment') continue;
    if (event.type === 'transcription.done') {
      assert.equal(event.text, want.text, 'transcription.done: every turn\'s text');
      break;
    }
    assert.ok(event.raw && !event.error, `the SDK hands voxrt's turn events over raw: ${JSON.stringify(event)}`);
    const raw = event.raw;
    const w = want.turns[turn];
    assert.ok(w, `more turns than voxrt stream --turns found: ${JSON.stringify(raw)}`);
    if (raw.type === 'transcription.speech_started') {
      assert.equal(ms(raw.start), ms(w.start), `mistral turn ${turn}: start`);
      deltas = '';
    } else if (raw.type === 'transcription.speech_stopped') {
      assert.equal(ms(raw.end), ms(w.end), `mistral turn ${turn}: end`);
    } else {
      assert.equal(raw.type, 'transcription.turn.done', JSON.stringify(raw));
      assert.equal(raw.text, w.text, `mistral turn ${turn}: text`);
      assert.equal(deltas, w.text, `mistral turn ${turn}: the deltas add up to its text`);
      ++turn;
    }
  }
  assert.ok(updated, 'session.updated');
  assert.equal(turn, want.turns.length, 'every turn');
  await connection.close();
  console.log(`@mistralai/mistralai realtime, turn_detection {}: ${turn} turns as voxrt stream --turns, then the done text`);
}

// ---- vLLM ----

async function vllm() {
  const want = expectedTurns(wav16);
  const ws = new WebSocket(`${serverURL.replace('http', 'ws')}/v1/realtime`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const q = eventQueue();
  ws.on('message', (data) => q.push(JSON.parse(data.toString())));
  ws.on('close', () => q.push({ type: 'socket closed' }));
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  assert.equal((await q.next()).type, 'session.created');
  ws.send(JSON.stringify({ type: 'session.update', model: 'voxtral', turn_detection: { type: 'server_vad' } }));
  ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  const samples = pcm16(wav16, 16000);
  for (let at = 0; at < samples.length; at += 3200)
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: samples.subarray(at, at + 3200).toString('base64') }));
  ws.send(JSON.stringify({ type: 'input_audio_buffer.commit', final: true }));
  let turn = 0;
  for (;;) {
    const e = await q.next();
    const w = want.turns[turn];
    if (e.type === 'transcription.delta') continue;
    if (e.type === 'transcription.done') {
      assert.equal(e.text, want.text, 'transcription.done: every turn\'s text');
      break;
    }
    assert.ok(w, `more turns than voxrt stream --turns found: ${JSON.stringify(e)}`);
    if (e.type === 'input_audio_buffer.speech_started') assert.equal(e.audio_start_ms, ms(w.start), `vllm turn ${turn}: start`);
    else if (e.type === 'input_audio_buffer.speech_stopped') assert.equal(e.audio_end_ms, ms(w.end), `vllm turn ${turn}: end`);
    else {
      assert.equal(e.type, 'transcription.turn.done', JSON.stringify(e));
      assert.equal(e.text, w.text, `vllm turn ${turn}: text`);
      ++turn;
    }
  }
  assert.equal(turn, want.turns.length, 'every turn');
  ws.close();
  console.log(`vLLM realtime (ws), turn_detection server_vad: ${turn} turns as voxrt stream --turns, then the done text`);
}

try {
  await openai();
  await mistral();
  await vllm();
} catch (e) {
  console.error(`realtime turns: FAILED: ${e.stack || e}`);
  process.exit(1);
}
