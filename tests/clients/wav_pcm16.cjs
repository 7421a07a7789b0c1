// The samples of a mono PCM16 WAV at `rate`: the bytes of its data chunk (the clients' audio).
const assert = require('node:assert/strict');
const fs = require('node:fs');

function pcm16(file, rate) {
  const wav = fs.readFileSync(file);
  assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
  for (let at = 12; at + 8 <= wav.length;) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      assert.equal(wav.readUInt16LE(at + 10), 1, 'mono');
      assert.equal(wav.readUInt32LE(at + 12), rate, `${rate} Hz`);
      assert.equal(wav.readUInt16LE(at + 22), 16, '16-bit');
    }
    if (id === 'data') return wav.subarray(at + 8, at + 8 + size);
    at += 8 + size + (size % 2);
  }
  throw new Error(`${file}: no data chunk`);
}

module.exports = { pcm16 };
