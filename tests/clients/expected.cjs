// What `voxrt transcribe -f json` wrote for a file (scripts/test_clients.sh writes it into
// EXPECTED_DIR as STEM.json), and the comparisons the client tests make against it: segments by
// text, start and end; words by text, start and end (to the millisecond, as the JSON carries them).
// A client's word is {word, start, end} (OpenAI's and voxrt's extension fields); the CLI's is
// {text, start, end}.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ms = (s) => Math.round(s * 1000);

// {stem, expected, expectedFile(ext)} for AUDIO's transcript in EXPECTED_DIR.
function loadExpected(expectedDir, audio) {
  const stem = path.basename(audio, path.extname(audio));
  const expected = JSON.parse(fs.readFileSync(path.join(expectedDir, `${stem}.json`), 'utf8'));
  const expectedFile = (ext) => fs.readFileSync(path.join(expectedDir, `${stem}.${ext}`), 'utf8');
  return { stem, expected, expectedFile };
}

// Every word of the transcript, in order.
const expectedWords = (expected) => expected.segments.flatMap((s) => s.words);

function sameWords(got, words, what) {
  assert.ok(Array.isArray(got), `${what}: an array of words`);
  assert.equal(got.length, words.length, `${what}: word count`);
  got.forEach((w, i) => {
    assert.equal(w.word, words[i].text, `${what} ${i}: word`);
    assert.equal(ms(w.start), ms(words[i].start), `${what} ${i}: start`);
    assert.equal(ms(w.end), ms(words[i].end), `${what} ${i}: end`);
  });
}

// withWords: each segment carries its words too (voxrt's realtime extensions do; OpenAI's
// verbose_json segments do not).
function sameSegments(got, segments, what, { withWords = false } = {}) {
  assert.ok(Array.isArray(got), `${what}: an array of segments`);
  assert.equal(got.length, segments.length, `${what}: segment count`);
  got.forEach((s, i) => {
    assert.equal(s.text, segments[i].text, `${what} ${i}: text`);
    assert.equal(ms(s.start), ms(segments[i].start), `${what} ${i}: start`);
    assert.equal(ms(s.end), ms(segments[i].end), `${what} ${i}: end`);
    if (withWords) sameWords(s.words, segments[i].words, `${what} ${i} words`);
  });
}

module.exports = { ms, loadExpected, expectedWords, sameWords, sameSegments };
