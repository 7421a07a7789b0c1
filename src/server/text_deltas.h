// The text deltas a client is sent while the model decides the text (the realtime dialects' delta
// events, the transcription endpoint's stream=true events), made from the engine's Text events so
// that they add up to the final text exactly. The engine's Text events carry the model's tokens as
// they are: the first usually begins with a space (Tekken tokens carry their leading space) and the
// last may end with one, while Transcript::text has the whitespace at both ends trimmed. A client
// that shows the deltas as they come would show another string than the done event's.
//
// Characters split across tokens are not cut here: the engine's Text events hold complete UTF-8
// characters only (an incomplete sequence waits for the token that completes it).
#pragma once

#include <string>
#include <string_view>

namespace voxrt::server {

class TextDeltas {
 public:
  // The delta to send for the text of one Text event; empty: nothing to send now (whitespace before
  // the first word, or held back until more text follows it).
  std::string next(std::string_view text);
  // A new transcript starts (the next utterance of a connection).
  void reset();

 private:
  bool started_ = false;  // some text other than whitespace was sent
  std::string held_;      // whitespace after the last text sent: sent with the next text, never at the end
};

}  // namespace voxrt::server
