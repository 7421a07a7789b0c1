// voxrt transcribe [--model DIR] [--delay-ms N] [-f txt|json|srt|vtt[,...]] [-o FILE | --output-dir DIR]
//                  [--max-line-chars N] [--max-cue-seconds S] [--timestamps] [--batch N]
//                  [--input-list FILE] [--context-bias "a,b"] [--context-bias-file FILE]
//                  [--context-bias-strength X] AUDIO|DIR|-...
//
// Every value and every input is checked before the model loads. Several inputs are transcribed
// side by side (Engine::transcribe_each: their steps share the model's passes) and written in input
// order as they finish. Outputs are written through OutputSink: checked writes, files renamed into
// place only when complete. One input failing (unreadable before the load, or failing while it is
// transcribed) does not stop the others; each is named on stderr and the exit status is then 1.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/context_bias_options.h"
#include "cli/engine_options.h"
#include "cli/input_check.h"
#include "cli/list_file.h"
#include "cli/output_sink.h"
#include "cli/stdin_audio.h"
#include "cli/usage.h"
#include "common/error.h"
#include "formats/output_formats.h"
#include "voxrt/voxrt.h"

namespace voxrt::cli {

using formats::Format;
using formats::RenderOptions;
using formats::format_extension;
using formats::parse_format_list;
using formats::render;
namespace {

struct TranscribeArgs {
  EngineArgs engine;
  int delay_ms = 0;
  std::string format = "txt";
  std::string output;
  std::string output_dir;
  RenderOptions render;
  int batch = 0;  // files in flight; 0: the engine's choice
  std::string input_list;
  ContextBiasArgs bias;
  std::vector<std::string> inputs;
};

// The options every input is transcribed with (progress aside).
TranscribeOptions transcribe_options(const TranscribeArgs& a) {
  TranscribeOptions to;
  to.delay_ms = a.delay_ms;
  to.context_bias = a.bias.phrases;
  to.context_bias_strength = a.bias.strength;
  return to;
}

// Progress on stderr for inputs longer than this: short files finish before it would help.
constexpr double kProgressMinSeconds = 20.0;

class ProgressLine {
 public:
  ProgressLine(std::string name, bool enabled) : name_(std::move(name)), enabled_(enabled), tty_(isatty(2)) {}
  void update(int done, int total) {
    if (!enabled_ || total <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    const int pct = std::min(100, static_cast<int>(100.0 * done / total));
    if (tty_) {
      if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
      std::cerr << "\r" << name_ << ": " << pct << "% (" << done << "/" << total << " steps)" << std::flush;
    } else if (pct / 10 != last_pct_ / 10 || done == total) {
      std::cerr << name_ << ": " << pct << "%\n";
    }
    last_ = now;
    last_pct_ = pct;
  }
  void finish() {
    if (enabled_ && tty_) std::cerr << "\n";
  }

 private:
  std::string name_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point last_{};
  int last_pct_ = -1;
};

// What the arguments ask to be written, decided (and checked) before anything runs.
struct OutputPlan {
  std::vector<Format> formats;
  // --output-dir: each input's files, one per format, in the order of `formats`.
  std::map<std::string, std::vector<std::filesystem::path>> files;
  // Several inputs given in txt to one output: each transcript headed by its input's name (decided
  // on the inputs given, so that the output's shape does not depend on which of them can be read).
  bool txt_headers = false;
};

std::filesystem::path output_file_for(const std::string& dir, const std::string& input, Format f) {
  const std::string stem = input == kStdinInput ? "stdin" : std::filesystem::path(input).stem().string();
  return std::filesystem::path(dir) / (stem + "." + format_extension(f));
}

OutputPlan plan_outputs(const TranscribeArgs& a) {
  OutputPlan plan;
  try {
    plan.formats = parse_format_list(a.format);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  const bool several_inputs = a.inputs.size() > 1;
  if (!a.output.empty() && !a.output_dir.empty()) throw UsageError("-o and --output-dir: give one of them");
  if (a.output_dir.empty()) {
    if (plan.formats.size() > 1)
      throw UsageError("--format " + a.format + ": several formats need --output-dir DIR (one file per input and format)");
    const Format f = plan.formats[0];
    if (several_inputs && (f == Format::Srt || f == Format::Vtt))
      throw UsageError("--format " + a.format + " with " + std::to_string(a.inputs.size()) +
                       " inputs: one subtitle file holds one input; use --output-dir DIR for a file per input");
  }
  plan.txt_headers = several_inputs && a.output_dir.empty() && plan.formats[0] == Format::Txt;
  if (a.render.timestamps && std::find(plan.formats.begin(), plan.formats.end(), Format::Txt) == plan.formats.end())
    throw UsageError("--timestamps applies to --format txt (json, srt and vtt always carry times)");
  if (a.render.max_line_chars < 10 || a.render.max_line_chars > 1000)
    throw UsageError("--max-line-chars " + std::to_string(a.render.max_line_chars) + ": expected 10 to 1000");
  if (!(a.render.max_cue_seconds >= 1.0 && a.render.max_cue_seconds <= 600.0))
    throw UsageError("--max-cue-seconds " + std::to_string(a.render.max_cue_seconds) + ": expected 1 to 600");

  if (!a.output_dir.empty()) {
    std::map<std::filesystem::path, std::string> owner;  // output file -> the input writing it
    for (const std::string& input : a.inputs) {
      std::vector<std::filesystem::path>& mine = plan.files[input];
      if (!mine.empty()) throw UsageError(input + ": given twice");
      for (Format f : plan.formats) {
        const std::filesystem::path out = output_file_for(a.output_dir, input, f);
        const auto [it, fresh] = owner.emplace(out.lexically_normal(), input);
        if (!fresh)
          throw UsageError(it->second + " and " + input + " would both write " + out.string() +
                           ": give inputs with different names, or run them separately");
        mine.push_back(out);
      }
    }
  }
  return plan;
}

// Refuses an output that is one of the inputs: transcribing talk.wav into talk.wav destroys it.
void check_outputs_spare_inputs(const TranscribeArgs& a, const OutputPlan& plan) {
  for (const std::string& input : a.inputs) {
    if (!a.output.empty() && a.output != "-" && same_file(a.output, input)) throw Error("-o " + a.output + ": is the input " + input);
    for (const auto& [owner, files] : plan.files)
      for (const std::filesystem::path& f : files)
        if (same_file(f, input)) throw Error(f.string() + ": is the input " + input + "; it would be overwritten");
  }
}

// `voxrt transcribe a.wav b.wav` in txt: a header per input, the convention of head(1) and tail(1).
std::string with_header(const std::string& input, const std::string& doc, bool first) {
  return (first ? "" : "\n") + std::string("==> ") + (input == kStdinInput ? kStdinName : input) + " <==\n" + doc;
}

void report_empty(const TranscribeArgs& a, const std::string& input, const Transcript& t) {
  if (t.tokens.empty() && t.duration == 0 && !a.engine.quiet)
    std::cerr << "voxrt: " << input << ": no audio (0 samples): the transcript is empty\n";
}

Transcript transcribe_one(Engine& engine, const TranscribeArgs& a, const std::string& input, const std::string& path) {
  TranscribeOptions to = transcribe_options(a);
  auto progress = std::make_shared<ProgressLine>(input, false);
  to.progress = [&, progress](int done, int total) {
    // Enable once the input is known to be long: 12.5 steps per second of audio.
    if (done == 1 && total / 12.5 > kProgressMinSeconds && !a.engine.quiet) *progress = ProgressLine(input, true);
    progress->update(done, total);
  };
  Transcript t;
  try {
    t = engine.transcribe_file(path, to);
  } catch (const OptionError& e) {  // a phrase of more tokens than allowed, found once the tokenizer is loaded
    throw Error(as_option(e));
  }
  progress->finish();
  report_empty(a, input, t);
  return t;
}

constexpr int kMaxBatch = 1024;

// Audio file names a directory input contributes (what libsndfile reads).
bool audio_extension(const std::filesystem::path& p) {
  static const char* const kExtensions[] = {".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif",
                                            ".aiff", ".aifc", ".au", ".caf", ".w64", ".rf64"};
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(std::begin(kExtensions), std::end(kExtensions), ext) != std::end(kExtensions);
}

// The inputs to run: --input-list's lines (blank lines and # comments skipped; - is standard
// input) then the arguments, a directory standing for its audio files (by extension, sorted, not
// descending into subdirectories).
void expand_inputs(TranscribeArgs& a) {
  std::vector<std::string> listed;
  if (!a.input_list.empty()) {
    std::ifstream file;
    if (a.input_list != "-") {
      file.open(a.input_list);
      if (!file) throw Error("--input-list " + a.input_list + ": cannot open it");
    }
    listed = read_list(a.input_list == "-" ? std::cin : file, "--input-list " + a.input_list);
  }
  listed.insert(listed.end(), a.inputs.begin(), a.inputs.end());
  const auto stdin_inputs = std::count(listed.begin(), listed.end(), std::string(kStdinInput));
  if (stdin_inputs > 1) throw UsageError("- (standard input) is given " + std::to_string(stdin_inputs) + " times");
  if (stdin_inputs > 0 && a.input_list == "-")
    throw UsageError("--input-list - and the input -: standard input holds one of them, not both");
  std::vector<std::string> inputs;
  for (const std::string& input : listed) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      inputs.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(input, ec))
      if (entry.is_regular_file(ec) && audio_extension(entry.path())) found.push_back(entry.path().string());
    if (ec) throw Error(input + ": cannot list the directory: " + ec.message());
    if (found.empty()) throw Error(input + ": a directory without audio files (.wav, .flac, .ogg, .opus, .mp3, ...)");
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  if (inputs.empty()) throw UsageError("no inputs: give audio files, directories or --input-list FILE");
  a.inputs = std::move(inputs);
}

// Writes one input's transcript: into the shared output (standard output or -o FILE) or its files
// under --output-dir.
class TranscriptWriter {
 public:
  TranscriptWriter(const TranscribeArgs& a, const OutputPlan& plan, OutputSink* shared)
      : a_(a), plan_(plan), shared_(shared), headers_(plan.txt_headers) {}
  void write(const std::string& input, const Transcript& t) {
    if (shared_) {
      const std::string doc = render(t, plan_.formats[0], input, a_.render);
      shared_->write(headers_ ? with_header(input, doc, written_ == 0) : doc);
    } else {
      const std::vector<std::filesystem::path>& files = plan_.files.at(input);
      for (size_t i = 0; i < files.size(); ++i) {
        std::unique_ptr<OutputSink> file = OutputSink::file(files[i]);
        file->write(render(t, plan_.formats[i], input, a_.render));
        file->commit();
      }
    }
    ++written_;
  }
  int written() const { return written_; }

 private:
  const TranscribeArgs& a_;
  const OutputPlan& plan_;
  OutputSink* shared_;
  bool headers_;
  int written_ = 0;
};

void run_transcribe(TranscribeArgs a) {
  expand_inputs(a);
  // Everything that can be checked is, before the model loads.
  const OutputPlan plan = plan_outputs(a);
  check_engine_args(a.engine);
  check_context_bias_args(a.bias);
  check_outputs_spare_inputs(a, plan);
  // `-`: standard input, copied to a temporary file first (stdin_audio.h), and named as itself.
  std::optional<StdinAudio> stdin_audio;
  if (std::find(a.inputs.begin(), a.inputs.end(), kStdinInput) != a.inputs.end()) stdin_audio.emplace();
  const auto path_of = [&](const std::string& input) { return input == kStdinInput ? stdin_audio->path().string() : input; };
  const auto named = [&](const std::string& message) { return stdin_audio ? stdin_audio->named(message) : message; };
  // Unreadable inputs are reported now and left out; the others run, and the exit status says 1.
  const std::vector<std::string> readable = readable_audio_inputs(a.inputs, [&](const std::string& input) {
    try {
      check_audio_input(path_of(input));
    } catch (const Error& e) {
      throw Error(named(e.what()));
    }
  });
  int failed = static_cast<int>(a.inputs.size() - readable.size());
  const size_t given = a.inputs.size();
  a.inputs = readable;
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (!std::filesystem::is_directory(a.output_dir))
      throw Error("--output-dir " + a.output_dir + ": cannot create the directory" + (ec ? ": " + ec.message() : ""));
  }
  // -o FILE and standard output take every input's document; --output-dir a file per input and
  // format. Opened before the load, so that an output that cannot be made costs nothing.
  std::unique_ptr<OutputSink> shared;
  if (a.output_dir.empty()) shared = OutputSink::standard_output_or_file(a.output);
  std::unique_ptr<Engine> engine = load_engine(a.engine);

  TranscriptWriter writer(a, plan, shared.get());
  if (a.inputs.size() == 1) {
    try {
      writer.write(a.inputs[0], transcribe_one(*engine, a, a.inputs[0], path_of(a.inputs[0])));
    } catch (const WriteError&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "voxrt: error: " << named(e.what()) << "\n";
      ++failed;
    }
  } else {
    std::vector<std::filesystem::path> files;
    for (const std::string& input : a.inputs) files.push_back(path_of(input));
    const TranscribeOptions to = transcribe_options(a);
    // A WriteError from the writer stops the run: everything after it would be lost too.
    try {
      engine->transcribe_each(
        files, to,
        [&](BatchItem& item) {
          const std::string& input = a.inputs[item.index];
          if (!item.ok()) {
            std::cerr << "voxrt: error: " << named(item.error) << "\n";
            ++failed;
            return;
          }
          report_empty(a, input, item.transcript);
          writer.write(input, item.transcript);
        },
        a.batch);
    } catch (const OptionError& e) {  // a phrase of more tokens than allowed: refused before any file
      throw Error(as_option(e));
    }
  }
  // A run whose inputs all failed leaves an existing -o FILE as it was.
  if (shared && writer.written() > 0) shared->commit();
  if (failed > 0) {
    set_exit_status(kExitFailure);
    if (given > 1)
      std::cerr << "voxrt: error: " << failed << " of " << given << " inputs failed (named above); the others were transcribed\n";
  }
}

}  // namespace

void add_transcribe_command(CLI::App& app) {
  auto args = std::make_shared<TranscribeArgs>();
  CLI::App* cmd = app.add_subcommand("transcribe", "Transcribe audio files (offline, whole file)");
  add_engine_options(cmd, args->engine);
  add_gpus_option(cmd, args->engine);
  add_delay_option(cmd, args->delay_ms);
  cmd->add_option("--format,-f", args->format, "Output format: txt, json, srt or vtt; several with --output-dir (srt,vtt,json)")
      ->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write to FILE instead of standard output (replaced only when complete; - is standard output)");
  cmd->add_option("--output-dir", args->output_dir, "Write one file per input and format into DIR, named after the input (talk.flac -> DIR/talk.srt)");
  cmd->add_option("--max-line-chars", args->render.max_line_chars, "srt/vtt: characters per subtitle line (2 lines a cue at most)")
      ->capture_default_str();
  cmd->add_option("--max-cue-seconds", args->render.max_cue_seconds, "srt/vtt: seconds a subtitle stays on screen at most")
      ->capture_default_str();
  cmd->add_flag("--timestamps", args->render.timestamps, "txt: one line per subtitle cue, with its start and end ([00:00:01.200 --> 00:00:03.400] text)");
  // Checked as it is parsed, like --threads: 0 stays "not given" inside, and a 0 given is refused
  // (it would mean "the default", which leaving the option out already says).
  cmd->add_option_function<int>(
      "--batch",
      [args](const int& v) {
        if (v < 1 || v > kMaxBatch)
          throw UsageError("--batch " + std::to_string(v) + ": expected 1 to " + std::to_string(kMaxBatch));
        args->batch = v;
      },
      "Files transcribed side by side, 1 to " + std::to_string(kMaxBatch) +
          ", their steps sharing the model's passes (default: 16 on the GPU, 1 on the CPU)");
  cmd->add_option("--input-list", args->input_list, "Also transcribe the files listed in FILE, one per line (- for standard input)");
  add_context_bias_options(cmd, args->bias);
  cmd->add_option("audio", args->inputs,
                  "Audio files (WAV, FLAC, OGG/Opus, MP3; any rate, any channels), directories of them, or - for standard input");
  cmd->callback([args] { run_transcribe(*args); });
}

}  // namespace voxrt::cli
