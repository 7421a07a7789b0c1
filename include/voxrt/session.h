// voxrt live sessions: transcribe while the audio arrives (docs/model.md §10).
//
//   auto session = engine->open_session({.delay_ms = 480, .on_event = [](const voxrt::StreamEvent& e) {
//     if (e.kind == voxrt::StreamEvent::Kind::Text) std::cout << e.text << std::flush;
//   }});
//   while (read(chunk)) session->feed(chunk);   // floats at SessionOptions' rate and channels
//                                                // (16 kHz mono by default), any chunk size
//   session->flush();                            // the last words: right pad + drain
//
// Work happens inside feed(): as soon as 80 ms of new audio complete a decoder position, that
// position runs and its events are delivered through on_event before feed() returns. The first
// output needs the prompt window filled (about 562 ms of audio at the default delay); after that
// each 80 ms of audio gives one position. Token ids are identical to the offline result for the same audio, whatever the
// chunk sizes.
//
// Thread safety: a Session is used by one thread at a time (feed/flush/transcript are not
// re-entrant). Any number of sessions may share one Engine and run on different threads: the
// engine's scheduler runs the positions of all of them together (feed() returns once the
// positions its audio completed have run, in passes shared with the other sessions), each session's ids exactly
// those it gets alone; sessions never see each other's state. The log-mel front end runs inside
// feed() on the caller's thread. on_event runs on the thread that called feed() or flush(). A
// session must not outlive its Engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "voxrt/export.h"
#include "voxrt/voxrt.h"

namespace voxrt {

struct StreamEvent {
  enum class Kind {
    Text,          // text decided at this position (UTF-8, complete characters only)
    SegmentStart,  // a word group starts ([STREAMING_WORD]); `start` is its time
    SegmentEnd,    // the current word group ended; `start`, `end` and `text` describe it
    Eos,           // the model emitted end-of-sequence (a boundary; decoding goes on unless stop_at_eos)
    // A word is complete: `text` (no whitespace), `start`, `end` as in Transcript::words. Sent as
    // soon as the word is known to be over: at the position whose text begins with whitespace
    // (Tekken tokens carry their leading space, so usually the next word's first token), at a
    // segment boundary, at EOS, or in flush(); before that position's Text event. `position` is
    // that position, not the word's own.
    Word,
    // Turn detection (SessionOptions::turns) only. A turn began: `start` is where its audio starts
    // (the speech's onset less prefix_padding_ms, never before the previous turn's end); sent about
    // min_speech_ms after the onset, before any of the turn's text.
    SpeechStarted,
    // The turn is over: `start` and `end` bound its speech. Its last words follow (the delay's
    // held-back text, decoded as flush() decodes it), then TurnEnd.
    SpeechStopped,
    // The turn's text is final: `text` is all of it (trimmed), `start` / `end` as SpeechStopped's.
    // Nothing of this turn follows; the next turn starts with SpeechStarted.
    TurnEnd,
  };
  Kind kind = Kind::Text;
  std::string text;
  // Seconds of input audio, timed as voxrt.h says (80 ms positions less the delay, whole
  // milliseconds). Never past the audio: before flush() a position's time is within the audio fed
  // so far; the right pad
  // decoded by flush() maps past the end, so its times are clamped to the audio's duration.
  double start = 0, end = 0;
  int64_t position = 0;       // decoder position of the output (0 = the first after the prompt)
  int64_t step = 0;           // deprecated, kept for one release: the same as position
  int32_t token = 0;          // the decoder output id behind this event
};

// Server-side turn detection for voice agents (OpenAI's server_vad, Mistral's turn_detection): the
// session finds where speech starts and stops (audio/voice_activity.h, on the audio) and, at a
// turn's end, decodes the words the delay still holds, as flush() does, so each turn's text is final
// as soon as the turn is over. Each turn is transcribed as an utterance of its own: its ids are
// those of the audio from its start to the point its end was decided, transcribed alone. Audio
// outside turns (silence, noise the detector does not take for speech) is not given to the model.
//
// Where a turn ends combines the detector with the model's own signal: after silence_duration_ms
// without speech the turn ends, unless the model is still writing text for audio after the
// detector's stop (speech too quiet or too unlike speech for the detector); then it ends once the
// model has written nothing for silence_duration_ms of audio, or end_timeout_ms after the
// detector's stop, whichever comes first.
struct TurnDetection {
  float threshold = 0.5f;         // 0..1: how sure of speech a frame must be (OpenAI's threshold)
  int prefix_padding_ms = 300;    // audio kept before the detected onset (OpenAI's prefix_padding_ms)
  int silence_duration_ms = 500;  // silence that ends a turn (OpenAI's silence_duration_ms, Mistral's min_silence_ms)
  int end_timeout_ms = 0;         // the longest a turn is held for the model after that; 0: silence_duration_ms + 1000
};

// Throws OptionError naming the field ("turns.silence_duration_ms 5: expected 10 to 60000") for a
// value open_session would refuse: threshold outside 0..1, times outside 0 (10 for the silence) to
// 60000 ms, an end_timeout_ms other than 0 below silence_duration_ms.
VOXRT_API void check_turn_detection(const TurnDetection& turns);

struct SessionOptions {
  int delay_ms = 0;          // 0: tekken.json's transcription_delay_ms (480)
  // What feed() is given: interleaved frames of `channels` samples at `sample_rate` Hz (1 kHz to
  // 1 MHz; 0: the model's 16000), averaged to mono and resampled inside, as files are (a session
  // fed a file's samples hears what transcribe_file of it hears). A frame may be split across feeds.
  int sample_rate = 0;
  int channels = 1;          // 1 to 256
  bool stop_at_eos = false;  // offline-like: stop decoding at the first EOS (ignored audio after it)
  // When the engine already has EngineOptions::max_sessions in progress: false, open_session throws
  // voxrt::Error at once; true, it waits until one ends.
  bool wait_for_room = false;
  // The most audio this session will be fed (seconds): the cache pages it reserves when it opens,
  // so that a full engine refuses it at once instead of failing it midway. 0: the engine's
  // EngineOptions::max_session_seconds. Past it the session goes on while the engine has spare
  // pages, and fails (feed throws voxrt::Error) when it has none.
  double max_seconds = 0;
  // Turn detection (TurnDetection above); none: the session transcribes everything it is fed as one
  // utterance, ended by flush().
  std::optional<TurnDetection> turns;
  // Context biasing (voxrt/context_bias.h): words and phrases to prefer, such as names and terms the
  // model may not know (Mistral's context_bias): at most 100, each 1 to 100 bytes of UTF-8 once
  // trimmed and 32 tokens. Their tokens' logits are raised by context_bias_strength (logit units, 0 to
  // 20; default 3) as the greedy decoder chooses. Empty (or a strength of 0): no biasing, and the ids
  // are exactly those without it. A list out of these limits is refused with an OptionError naming
  // the field.
  std::vector<std::string> context_bias;
  float context_bias_strength = kDefaultContextBiasStrength;
  std::function<void(const StreamEvent&)> on_event;
};

struct SessionStats {
  int64_t positions = 0;            // decoder positions run (an output each)
  double audio_seconds = 0;         // audio fed so far
  double compute_seconds = 0;       // time spent in model work for this session
  std::vector<double> position_ms;  // each position's compute time, most recent last (bounded history)
  int64_t steps = 0;                // deprecated, kept for one release: the same as positions
  std::vector<double> step_ms;      // deprecated, kept for one release: the same as position_ms
};

class VOXRT_API Session {
 public:
  virtual ~Session() = default;
  // Adds samples at SessionOptions::sample_rate, SessionOptions::channels interleaved (by default
  // the model's 16 kHz mono), any count including 0, and runs every position they complete.
  virtual void feed(std::span<const float> samples) = 0;
  // End of input: appends the offline right pad and decodes to the end. feed() after flush() is an
  // error (voxrt::Error); flush() twice is harmless.
  virtual void flush() = 0;
  // Everything decided so far, in the offline format (text, tokens, segments, words, duration); the
  // word and segment still open are not in it before flush().
  virtual Transcript transcript() const = 0;
  virtual const SessionStats& stats() const = 0;
};

}  // namespace voxrt
