// Mistral's official TypeScript client (`@mistralai/mistralai`, its extra/realtime
// RealtimeTranscription) against `voxrt serve`'s /v1/audio/transcriptions/realtime
// (scripts/test_clients.sh): the file's PCM16 in 100 ms chunks, and the text of transcription.done,
// of the text deltas, and the segments (those of transcription.segment and of transcription.done)
// equal to `voxrt transcribe` on the same file. Every event must pass the SDK's own validation: one
// it could not parse comes as {type, raw, error} and fails the test.
// The delay: the TS SDK has no way to ask for one (its session.update carries only audio_format;
// the Python SDK's carries target_streaming_delay_ms too). At the server's default delay the test
// runs transcribeStream as it is; at any other, it opens the session with the SDK's connect() and
// sends the session.update the Python SDK would send with the connection's own JSON sender
// (sendJson, private in the TypeScript types only), then streams as transcribeStream does.
//   node mistral_realtime.mjs CLIENTS_DIR SERVER_URL API_KEY AUDIO_16K_PCM16_WAV EXPECTED_DIR DELAY_MS
import path from 'node:path';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const requireHere = createRequire(import.meta.url);
const { pcm16 } = requireHere('./wav_pcm16.cjs');
const { loadExpected, sameSegments } = requireHere('./expected.cjs');

const [clientsDir, serverURL, apiKey, audio, expectedDir, delayArg] = process.argv.slice(2);
const realtime = createRequire(path.join(clientsDir, 'package.json')).resolve('@mistralai/mistralai/extra/realtime');
const { RealtimeTranscription, AudioEncoding } = await import(pathToFileURL(realtime).href);
const model = 'voxtral-mini-transcribe-realtime-2602';
const delay = Number(delayArg);
const { stem, expected } = loadExpected(expectedDir, audio);


async function* chunks(samples) {
  for (let at = 0; at < samples.length; at += 3200) yield samples.subarray(at, at + 3200);
}

// transcribeStream's own steps (transcription.ts), on a connection whose delay was set first.
async function* streamWithDelay(client, audioStream, audioFormat) {
  const connection = await client.connect(model, { audioFormat });
  await connection.sendJson({ type: 'session.update', session: { target_streaming_delay_ms: delay } });
  const sending = (async () => {
    try {
      for await (const chunk of audioStream) {
        if (connection.isClosed) break;
        await connection.sendAudio(chunk);
      }
    } finally {
      if (!connection.isClosed) await connection.flushAudio();
      await connection.endAudio();
    }
  })();
  try {
    for await (const event of connection) {
      yield event;
      if (event.type === 'transcription.done' || event.type === 'error') break;
    }
  } finally {
    await connection.close();
    await sending;
  }
}

async function main() {
  const samples = pcm16(audio, 16000);
  const client = new RealtimeTranscription({ apiKey, serverURL });
  const audioFormat = { encoding: AudioEncoding.PcmS16le, sampleRate: 16000 };

  const probe = await client.connect(model);
  const defaultDelay = probe.session.targetStreamingDelayMs;
  assert.equal(probe.session.model, model, 'session.created: the model asked for');
  await probe.close();

  const events = delay === defaultDelay
    ? client.transcribeStream(chunks(samples), model, { audioFormat })
    : streamWithDelay(client, chunks(samples), audioFormat);
  let session = null;
  let deltas = '';
  const segments = [];
  let done = null;
  for await (const e of events) {
    if ('raw' in e) assert.fail(`an event the SDK could not validate: ${e.error?.message} ${e.error?.cause ?? ''} ${JSON.stringify(e.raw)}`);
    assert.notEqual(e.type, 'error', `an error event: ${JSON.stringify(e.error)}`);
    if (e.type === 'session.created' || e.type === 'session.updated') session = e.session;
    else if (e.type === 'transcription.text.delta') deltas += e.text;
    else if (e.type === 'transcription.segment') segments.push(e);
    else if (e.type === 'transcription.done') done = e;
    else assert.fail(`an unexpected event: ${JSON.stringify(e)}`);
  }
  assert.ok(done, 'a transcription.done event');
  assert.ok(session, 'session.created');
  assert.equal(session.targetStreamingDelayMs, delay, 'the session\'s delay');
  assert.deepEqual(session.audioFormat, audioFormat, 'the session\'s audio format');
  assert.equal(done.model, model, 'transcription.done model');
  assert.equal(done.text, expected.text, 'transcription.done text');
  assert.equal(deltas, expected.text, 'the deltas add up to the text');
  sameSegments(segments, expected.segments, 'transcription.segment');
  sameSegments(done.segments, expected.segments, 'transcription.done segment');
  assert.equal(done.usage.promptAudioSeconds, Math.ceil(expected.duration), 'usage: audio seconds');
  const how = delay === defaultDelay ? 'transcribeStream' : 'connect + session.update';
  console.log(`mistral realtime (@mistralai/mistralai, ${how}): ${stem} at ${delay} ms: the deltas, ` +
              `${segments.length} segments and transcription.done as voxrt transcribe`);
}

main().catch((e) => {
  console.error(`mistral realtime (@mistralai/mistralai): FAILED: ${e.stack || e}`);
  process.exit(1);
});
