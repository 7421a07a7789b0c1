// A vLLM realtime client: streams a WAV file to `voxrt serve`'s /v1/realtime (or vLLM's own) and
// prints the transcript. Text appears on standard error as the model emits it; the final transcript
// (transcription.done) goes to standard output.
//   npm install --no-save ws
//   node examples/vllm_realtime_client.cjs talk.wav [ws://localhost:8000/v1/realtime] [DELAY_MS]
// talk.wav: 16 kHz mono 16-bit PCM, the rate the protocol carries (sox talk.flac -r 16000 -c 1 -b 16
// talk.wav makes one). DELAY_MS is voxrt's extension (80 to 1200 in steps of 80, or 2400); without
// it, the server's default. With `voxrt serve --api-key`, set VOXRT_API_KEY.
'use strict';
const fs = require('node:fs');
const WebSocket = require('ws');

const [file, url = 'ws://localhost:8000/v1/realtime', delay] = process.argv.slice(2);
if (!file) {
  console.error('usage: node vllm_realtime_client.cjs AUDIO_16K_MONO_PCM16.wav [WS_URL] [DELAY_MS]');
  process.exit(2);
}

// The data chunk of a 16 kHz mono PCM16 WAV.
function samples16k(path) {
  const wav = fs.readFileSync(path);
  if (wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path}: not a WAV file`);
  let format = null;
  for (let at = 12; at + 8 <= wav.length;) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      format = { tag: wav.readUInt16LE(at + 8), channels: wav.readUInt16LE(at + 10), rate: wav.readUInt32LE(at + 12), bits: wav.readUInt16LE(at + 22) };
    } else if (id === 'data') {
      if (!format || format.tag !== 1 || format.channels !== 1 || format.rate !== 16000 || format.bits !== 16)
        throw new Error(`${path}: needs 16 kHz mono 16-bit PCM, has ${JSON.stringify(format)} (convert it with sox or ffmpeg)`);
      return wav.subarray(at + 8, Math.min(wav.length, at + 8 + size));
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${path}: no data chunk`);
}

let audio;
try {
  audio = samples16k(file);
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
const headers = process.env.VOXRT_API_KEY ? { Authorization: `Bearer ${process.env.VOXRT_API_KEY}` } : {};
const ws = new WebSocket(url, { headers });
ws.on('error', (e) => { console.error(`${url}: ${e.message}`); process.exit(1); });
ws.on('message', (data) => {
  const event = JSON.parse(data.toString());
  if (event.type === 'session.created') {
    const update = { type: 'session.update', model: 'mistralai/Voxtral-Mini-4B-Realtime-2602' };
    if (delay !== undefined) update.delay_ms = Number(delay);
    ws.send(JSON.stringify(update));
    ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));  // opens the utterance
    for (let at = 0; at < audio.length; at += 3200)  // 100 ms an event
      ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: audio.subarray(at, at + 3200).toString('base64') }));
    ws.send(JSON.stringify({ type: 'input_audio_buffer.commit', final: true }));  // the end: the last words
  } else if (event.type === 'transcription.delta') {
    process.stderr.write(event.delta);
  } else if (event.type === 'transcription.done') {
    process.stderr.write('\n');
    process.stdout.write(`${event.text}\n`);
    ws.close();
  } else if (event.type === 'error') {
    console.error(`\nerror: ${event.error} (${event.code})`);
    process.exit(1);
  }
});
