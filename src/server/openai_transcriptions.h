// OpenAI's file transcription endpoint (POST /v1/audio/transcriptions, docs/serve.md): the form
// fields it takes and the bodies it answers with, for every response_format, and the Server-Sent
// Events of stream=true. Pure functions of the request and the Transcript, so that each is tested
// without a socket.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/context_bias_fields.h"
#include "server/multipart_form.h"
#include "voxrt/voxrt.h"

namespace voxrt::server {

enum class ResponseFormat { Json, Text, Srt, Vtt, VerboseJson };

struct TranscriptionRequest {
  std::string filename;    // as the client named the upload
  std::string_view audio;  // its bytes (a view into the request body)
  std::string model;       // accepted whatever it is: one model is served
  ResponseFormat format = ResponseFormat::Json;
  std::string language;    // accepted; the model finds the language itself (verbose_json echoes it)
  std::string prompt;      // its phrases feed the context biasing (context_bias_fields.h)
  bool stream = false;     // Server-Sent Events (json and text formats only, as OpenAI)
  bool words = false, segments = false;  // timestamp_granularities[] (verbose_json)
  int delay_ms = 0;        // extension: the transcription delay (0: the model's default)
  // Context biasing: Mistral's context_bias fields (one phrase each, repeated), then the prompt's
  // phrases; context_bias_strength (voxrt's extension).
  BiasRequest bias;
};

// Reads the form's fields. Throws RequestError 400 naming the field (param) for a missing file,
// an unknown response_format, a temperature other than 0, a stream or granularity that is not one,
// a delay the model has not (`delays`: the loaded model's ModelInfo::delays), a context-bias list
// or strength out of its limits.
TranscriptionRequest parse_transcription_request(const std::vector<FormPart>& form, const DelayRange& delays);

// The answer's body and Content-Type for the request's format.
struct RenderedTranscription {
  std::string body;
  std::string content_type;
};
RenderedTranscription render_transcription(const Transcript& t, const TranscriptionRequest& request);

// stream=true: one event per piece of text as the model emits it, and the whole text at the end,
// each a "data: {json}\n\n" Server-Sent Event.
std::string text_delta_event(const std::string& delta);
std::string text_done_event(const Transcript& t);

}  // namespace voxrt::server
