// Checks a response that a command-line client saved (scripts/test_clients.sh: curl's answers from
// POST /v1/audio/transcriptions, and what examples/vllm_realtime_client.cjs printed) against what
// `voxrt transcribe` wrote for the same file and delay (EXPECTED_DIR/STEM.json, .srt, .vtt):
//   json          {text} equal to the transcript
//   text          the body, less its trailing newline, equal to the transcript
//   srt, vtt      the body byte for byte equal to the CLI's file
//   verbose_json  (asked with timestamp_granularities[] word and segment) text, segments (text,
//                 start, end) and words (word, start, end)
//   sse           Server-Sent Events of stream=true: transcript.text.delta events whose deltas add
//                 up to the transcript, then one transcript.text.done, last, with the transcript
//   printed       a program's standard output: the transcript and a newline
// Exits 1 with the first difference on standard error.
//   node check_response.cjs FORMAT RESPONSE_FILE AUDIO EXPECTED_DIR
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { loadExpected, expectedWords, sameWords, sameSegments } = require('./expected.cjs');

const [format, responseFile, audio, expectedDir] = process.argv.slice(2);
const { expected, expectedFile } = loadExpected(expectedDir, audio);
const body = fs.readFileSync(responseFile, 'utf8');

function parse(what, text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    assert.fail(`${what}: not JSON (${e.message}): ${text.slice(0, 300)}`);
  }
}

// The events of a text/event-stream body: each block's `data:` lines joined, parsed as JSON.
function serverSentEvents(text) {
  return text.split(/\r?\n\r?\n/).filter((block) => block.trim() !== '').map((block) => {
    const data = block.split(/\r?\n/).filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, '')).join('\n');
    return parse('an event\'s data', data);
  });
}

const checks = {
  json() {
    assert.equal(parse('json', body).text, expected.text, 'json: text');
  },
  text() {
    assert.equal(body.replace(/\r?\n$/, ''), expected.text, 'text');
  },
  srt() {
    assert.equal(body, expectedFile('srt'), 'srt');
  },
  vtt() {
    assert.equal(body, expectedFile('vtt'), 'vtt');
  },
  verbose_json() {
    const verbose = parse('verbose_json', body);
    assert.equal(verbose.text, expected.text, 'verbose_json: text');
    sameSegments(verbose.segments, expected.segments, 'verbose_json segment');
    sameWords(verbose.words, expectedWords(expected), 'verbose_json word');
  },
  sse() {
    const events = serverSentEvents(body);
    assert.ok(events.length > 0, 'sse: no events');
    const done = events.pop();
    assert.equal(done.type, 'transcript.text.done', `sse: the last event: ${JSON.stringify(done)}`);
    events.forEach((e) => assert.equal(e.type, 'transcript.text.delta', `sse: an event before the done: ${JSON.stringify(e)}`));
    assert.equal(done.text, expected.text, 'sse: transcript.text.done text');
    assert.equal(events.map((e) => e.delta).join(''), expected.text, 'sse: the deltas add up to the text');
  },
  printed() {
    assert.equal(body, `${expected.text}\n`, 'printed transcript');
  },
};

try {
  assert.ok(Object.hasOwn(checks, format), `unknown format ${format}`);
  checks[format]();
} catch (e) {
  console.error(`check_response: ${e.message}`);
  process.exit(1);
}
