// Transcribes an audio file, or live audio from standard input, with the voxrt library.
//   transcribe MODEL_DIR talk.flac                                      any format, rate, channels
//   arecord -f FLOAT_LE -r 16000 -c 1 -t raw | transcribe MODEL_DIR -   live: 16 kHz mono floats
// MODEL_DIR: e.g. the one `voxrt pull` wrote, ~/.cache/voxrt/mistralai--Voxtral-Mini-4B-Realtime-2602
#include <voxrt/session.h>
#include <voxrt/voxrt.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR AUDIO|-\n";
    return 2;
  }
  try {
    auto engine = voxrt::Engine::load(argv[1]);
    if (std::string(argv[2]) != "-") {
      voxrt::Transcript t = engine->transcribe_file(argv[2]);  // also t.segments (start, end, text), t.tokens
      std::cout << t.text << "\n";
      return 0;
    }
    // Live: text is printed as the model decides it, while the audio is still arriving.
    auto live = engine->open_session({.delay_ms = 480, .on_event = [](const voxrt::StreamEvent& e) {
      if (e.kind == voxrt::StreamEvent::Kind::Text) std::cout << e.text << std::flush;
    }});
    std::vector<float> chunk(1280);  // any chunk size: each 80 ms of audio runs a step inside feed()
    while (size_t n = std::fread(chunk.data(), sizeof(float), chunk.size(), stdin)) live->feed({chunk.data(), n});
    live->flush();  // end of input: the last words
    std::cout << "\n";
    return 0;
  } catch (const voxrt::Error& e) {  // a missing model, an unreadable file: the message names it
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
