#include "cli/engine_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <iostream>

#include "cli/commands.h"
#include "cli/usage.h"

namespace voxrt::cli {
namespace {

// The option that sets each field the library's OptionError may name (EngineOptions, delay_ms,
// context_bias).
std::string option_of(const std::string& field) {
  static const std::pair<const char*, const char*> kOptions[] = {
      {"device", "--device"},         {"gpu", "--gpu"},
      {"gpus", "--gpus"},             {"threads", "--threads"},
      {"layout", "--layout"},         {"draft_rows", "--draft-rows"},
      {"kv_cache", "--kv"},           {"max_sessions", "--max-sessions"},
      {"max_memory", "--max-memory"}, {"max_memory_fraction", "--max-memory"},
      {"max_session_seconds", "--max-session-seconds"}, {"delay_ms", "--delay-ms"},
      {"qlinear", "--qlinear"},       {"qlinear_group_size", "--qlinear-group-size"},
      {"qlinear_encoder", "--qlinear-encoder"}, {"qlinear_encoder_group_size", "--qlinear-encoder-group-size"},
      {"qembedding", "--qembedding"}, {"qembedding_group_size", "--qembedding-group-size"},
      {"quantization_method", "--quantize-method"}, {"context_bias", "--context-bias"},
      {"context_bias_strength", "--context-bias-strength"}};
  for (const auto& [name, option] : kOptions)
    if (field == name) return option;
  return field;
}

}  // namespace

// The library's message about a field, saying the option instead.
std::string as_option(const OptionError& e) { return e.renamed(option_of(e.field())); }

namespace {

// The EngineOptions the shared options describe; OptionError for a device, layout or --kv name.
EngineOptions engine_options(const EngineArgs& a) {
  EngineOptions eo;
  eo.device = parse_device(a.device);
  eo.gpu = a.gpu;
  eo.gpus = a.gpus;
  eo.threads = a.threads;
  eo.layout = parse_layout(a.layout);
  eo.draft_rows = a.draft_rows;
  eo.max_sessions = a.max_sessions;
  eo.max_memory = a.max_memory;
  eo.max_memory_fraction = a.max_memory_fraction;
  eo.kv_cache = parse_kv_cache_format(a.kv_cache);
  eo.max_session_seconds = a.max_session_seconds;
  eo.refuse_when_overloaded = a.refuse_when_overloaded;
  eo.quantization = weight_quantization(a.quantize);
  return eo;
}

}  // namespace

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  cmd->add_option("--model,-m", a.model, "Model directory (default: the one `voxrt pull` downloads)");
  cmd->add_option("--device", a.device, "auto (a GPU if there is one), cuda or cpu")->capture_default_str();
  cmd->add_option("--gpu", a.gpu, "CUDA device index")->capture_default_str();
  cmd->add_option("--layout", a.layout, "Checkpoint files to read: auto, mistral or hf")->capture_default_str();
  // 0 is the library's "not given": given here it would silently mean the default, so it is
  // refused as it is parsed (the range is validate()'s, in check_engine_args).
  cmd->add_option_function<int>(
      "--threads,-t",
      [&a](const int& v) {
        if (v == 0) throw UsageError("--threads 0: expected 1 or more (leave --threads out for the cores this process may use)");
        a.threads = v;
      },
      "CPU threads, 1 to the number of CPUs (default: the cores this process may use, its CPU affinity and quota)");
  cmd->add_option("--draft-rows", a.draft_rows,
                  "Most decoder positions verified per pass when audio is ahead; each stream's width follows how often its guesses hold (0: 8 on the GPU, 1 on the CPU)")
      ->capture_default_str();
  cmd->add_option("--kv", a.kv_cache, "Key/value cache storage on the GPU: auto (bf16), bf16 or fp8 (half the memory)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", a.quiet, "No messages on standard error (errors excepted)");
  add_quantize_options(cmd, a.quantize);
}

void parse_max_memory(const std::string& text, EngineArgs& args) {
  const auto bad = [&] {
    return UsageError("--max-memory " + text +
                      ": expected a size such as 40GB, 512MiB or a byte count, or a fraction such as 0.8 of the memory "
                      "free once the model is loaded");
  };
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string unit = text.substr(used);
  if (unit.empty() && value > 0 && value <= 1) {
    args.max_memory_fraction = value;
    args.max_memory = 0;
    return;
  }
  static const std::pair<const char*, double> kUnits[] = {{"", 1},      {"B", 1},          {"KB", 1e3},
                                                          {"MB", 1e6},  {"GB", 1e9},       {"TB", 1e12},
                                                          {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const auto& [name, scale] : kUnits)
    if (unit == name) {
      const double bytes = value * scale;
      if (!(bytes >= 2) || bytes > 1e15) throw bad();
      args.max_memory = static_cast<size_t>(bytes);
      args.max_memory_fraction = 0;
      return;
    }
  throw bad();
}

std::vector<int> parse_gpus(const std::string& text, int cuda_devices) {
  auto bad = [&](const std::string& why) { return UsageError("--gpus " + text + ": " + why); };
  if (text == "all") {
    if (cuda_devices <= 0) throw bad("no CUDA device found (on the CPU, give a count: --gpus 2 loads two copies)");
    std::vector<int> all(static_cast<size_t>(cuda_devices));
    for (int i = 0; i < cuda_devices; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 4 || s.find_first_not_of("0123456789") != std::string::npos)
      throw bad("expected all, a count, or device indices separated by commas (0,2,3)");
    return std::stoi(s);
  };
  std::vector<int> out;
  if (text.find(',') == std::string::npos) {
    const int n = number(text);
    if (n < 1 || n > 64) throw bad("expected a count of 1 to 64 devices");
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  size_t from = 0;
  while (true) {
    const size_t comma = text.find(',', from);
    const int g = number(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (std::find(out.begin(), out.end(), g) != out.end()) throw bad("device " + std::to_string(g) + " given twice");
    out.push_back(g);
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

void add_gpus_option(CLI::App* cmd, EngineArgs& a) {
  // The capacity options are named only where the command has them (transcribe has not).
  const bool capacity = cmd->get_option_no_throw("--max-memory") != nullptr;
  cmd->add_option_function<std::string>(
      "--gpus", [&a](const std::string& v) { a.gpus = parse_gpus(v, cuda_device_count()); },
      std::string("Spread the work over several devices: all, a count N (devices 0..N-1; on the CPU, N copies of the model), or "
                  "indices such as 0,2,3. The checkpoint is read once; each device holds a copy of the weights") +
          (capacity ? " and its own --max-memory / --max-sessions" : "") +
          ", and each new session or file goes to the one with the fewest sessions, then the most free cache");
}

void add_capacity_options(CLI::App* cmd, EngineArgs& a, const std::string& sessions_help) {
  cmd->add_option("--max-sessions", a.max_sessions, sessions_help);
  cmd->add_option_function<std::string>(
      "--max-memory", [&a](const std::string& v) { parse_max_memory(v, a); },
      "Memory for the sessions' caches (e.g. 40GB, or 0.9 of what the weights and the passes' working memory leave "
      "free), allocated at load; a session that does not fit is refused (default: what --max-sessions sessions need, "
      "or grown as sessions open within the free memory; 1 holds about a quarter more sessions than grown caches reach)");
  cmd->add_option_function<double>(
      "--max-session-seconds",
      [&a](const double& v) { a.max_session_seconds = v; },
      "The length a session reserves cache pages for (0: a whole window, about 11 minutes; longer sessions go on "
      "while spare pages last)");
}

void add_delay_option(CLI::App* cmd, int& delay_ms) {
  // Read as a number, so that 2400.0 (a value a script computed) is 2400; 2400.5 is no delay.
  cmd->add_option_function<double>(
      "--delay-ms",
      [&delay_ms](const double& v) {
        if (!(std::abs(v) < 1e9) || v != std::floor(v)) {
          char text[64];
          std::snprintf(text, sizeof text, "%g", v);
          throw UsageError(std::string("--delay-ms ") + text + ": expected a whole number of milliseconds");
        }
        // Checked as it is parsed, so that a 0 given (the default's "not given") is refused too.
        try {
          validate_delay_ms(static_cast<int>(v));
        } catch (const OptionError& e) {
          throw UsageError(as_option(e));
        }
        delay_ms = static_cast<int>(v);
      },
      "Transcription delay: 80-1200 in steps of 80, or 2400 (default: tekken.json's, 480)");
}


void check_engine_args(const EngineArgs& a) {
  try {
    validate(engine_options(a));
  } catch (const OptionError& e) {
    throw UsageError(as_option(e));
  }
  if (!a.model.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(a.model, ec);
    if (!std::filesystem::exists(status)) throw Error("--model " + a.model + ": no such directory");
    if (!std::filesystem::is_directory(status))
      throw Error("--model " + a.model + ": not a directory (give the model's folder, the one holding tekken.json)");
  }
}

void load_engine_with(const EngineArgs& a, const EngineLoader& load) {
  check_engine_args(a);
  const std::filesystem::path dir = resolve_model_dir(a.model);
  const Engine* engine = nullptr;
  try {
    engine = &load(dir, engine_options(a));
  } catch (const OptionError& e) {  // the machine has not what an option asks (--device cuda without a GPU)
    throw Error(as_option(e));
  }
  const ModelInfo& info = engine->info();
  if (!a.quiet) {
    if (!info.device_note.empty()) std::cerr << "voxrt: " << info.device_note << "\n";
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", info.load_seconds);
    const std::string devices = a.gpus.size() > 1 ? " on " + std::to_string(a.gpus.size()) + " devices" : "";
    const std::string weights = info.weights == "bf16" ? "" : ", weights " + info.weights;
    std::cerr << "voxrt: loaded " << dir.string() << " (" << info.layout << " layout, " << info.backend << devices
              << weights << ") in " << seconds << " s\n";
  }
}

std::unique_ptr<Engine> load_engine(const EngineArgs& a) {
  std::unique_ptr<Engine> engine;
  load_engine_with(a, [&engine](const std::filesystem::path& dir, const EngineOptions& options) -> Engine& {
    engine = Engine::load(dir, options);
    return *engine;
  });
  return engine;
}

}  // namespace voxrt::cli
