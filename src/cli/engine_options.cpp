#include "cli/engine_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/usage.h"
#include "voxtral/protocol.h"

namespace voxrt::cli {
namespace {

// --threads and --delay-ms are checked as they are parsed, so that any value given, 0 included, is
// checked: 0 stays the "not given" of the options' defaults, and a 0 given (--delay-ms 0, -t 0) is
// an error rather than a silent "default".
void check_threads(int threads) {
  const int cpus = std::max(1u, std::thread::hardware_concurrency());
  if (threads < 1 || threads > cpus)
    throw UsageError("--threads " + std::to_string(threads) + ": expected 1 to " + std::to_string(cpus) +
                     " (the CPUs this machine has)");
}

void check_delay(int delay_ms) {
  try {
    delay_tokens_from_ms(delay_ms);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  cmd->add_option("--model,-m", a.model, "Model directory (default: the one `voxrt pull` downloads)");
  cmd->add_option("--device", a.device, "auto (a GPU if there is one), cuda or cpu")->capture_default_str();
  cmd->add_option("--gpu", a.gpu, "CUDA device index")->capture_default_str();
  cmd->add_option("--layout", a.layout, "Checkpoint files to read: auto, mistral or hf")->capture_default_str();
  cmd->add_option_function<int>(
      "--threads,-t", [&a](const int& v) { check_threads(v); a.threads = v; }, "CPU threads, 1 to the number of CPUs (default: the cores this process may use, its CPU affinity and quota)");
  cmd->add_option("--draft-rows", a.draft_rows,
                  "Most decoder positions verified per pass when audio is ahead; each stream's width follows how often its guesses hold (0: 8 on the GPU, 1 on the CPU)")
      ->capture_default_str();
  cmd->add_option("--kv", a.kv_cache, "Key/value cache storage on the GPU: auto (bf16), bf16 or fp8 (half the memory)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", a.quiet, "No messages on standard error (errors excepted)");
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
      "Memory for the sessions' caches (e.g. 40GB, or 0.8 of what the model leaves free), allocated at load; a "
      "session that does not fit is refused (default: what --max-sessions sessions need, or grown as sessions open)");
  cmd->add_option_function<double>(
      "--max-session-seconds",
      [&a](const double& v) {
        if (!(v >= 0) || v > 1e7) throw UsageError("--max-session-seconds " + std::to_string(v) + ": expected 0 (no limit) or more");
        a.max_session_seconds = v;
      },
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
        check_delay(static_cast<int>(v));
        delay_ms = static_cast<int>(v);
      },
      "Transcription delay: 80-1200 in steps of 80, or 2400 (default: tekken.json's, 480)");
}


void check_engine_args(const EngineArgs& a) {
  if (a.device != "auto" && a.device != "cuda" && a.device != "cpu")
    throw UsageError("--device " + a.device + ": expected auto, cuda or cpu");
  if (a.layout != "auto" && a.layout != "mistral" && a.layout != "hf")
    throw UsageError("--layout " + a.layout + ": expected auto, mistral or hf");
  if (a.kv_cache != "auto" && a.kv_cache != "bf16" && a.kv_cache != "fp8")
    throw UsageError("--kv " + a.kv_cache + ": expected auto, bf16 or fp8");
  // The CPU keeps its caches in fp32: name the option rather than let the engine name its field.
  if (a.kv_cache != "auto" && (a.device == "cpu" || (a.device == "auto" && cuda_device_count() == 0))) {
    const std::string why = "--kv " + a.kv_cache + ": the key/value cache storage is a GPU option; the CPU keeps fp32 caches " +
                            "(leave --kv out" + (a.device == "cpu" ? ")" : ", or run on a GPU)");
    if (a.device == "cpu") throw UsageError(why);  // two options that do not go together
    throw Error(why + ": no CUDA device found");
  }
  if (a.gpu < 0) throw UsageError("--gpu " + std::to_string(a.gpu) + ": expected a device index, 0 or more");
  if (a.max_sessions < 0)
    throw UsageError("--max-sessions " + std::to_string(a.max_sessions) + ": expected 0 (no limit) or more");
  if (a.draft_rows < 0 || a.draft_rows > EngineOptions::kMaxDraftRows)
    throw UsageError("--draft-rows " + std::to_string(a.draft_rows) + ": expected 0 (automatic) to " +
                     std::to_string(EngineOptions::kMaxDraftRows));
  if (!a.model.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(a.model, ec);
    if (!std::filesystem::exists(status)) throw Error("--model " + a.model + ": no such directory");
    if (!std::filesystem::is_directory(status))
      throw Error("--model " + a.model + ": not a directory (give the model's folder, the one holding tekken.json)");
  }
}

EngineOptions engine_options(const EngineArgs& a) {
  EngineOptions eo;
  eo.device = a.device;
  eo.gpu = a.gpu;
  eo.gpus = a.gpus;
  eo.threads = a.threads;
  eo.layout = a.layout;
  eo.draft_rows = a.draft_rows;
  eo.max_sessions = a.max_sessions;
  eo.max_memory = a.max_memory;
  eo.max_memory_fraction = a.max_memory_fraction;
  eo.kv_cache = a.kv_cache;
  eo.max_session_seconds = a.max_session_seconds;
  eo.refuse_when_overloaded = a.refuse_when_overloaded;
  return eo;
}

void say_loaded(const EngineArgs& a, const std::filesystem::path& dir, const ModelInfo& info) {
  if (!a.quiet) {
    if (!info.device_note.empty()) std::cerr << "voxrt: " << info.device_note << "\n";
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", info.load_seconds);
    const std::string devices = a.gpus.size() > 1 ? " on " + std::to_string(a.gpus.size()) + " devices" : "";
    std::cerr << "voxrt: loaded " << dir.string() << " (" << info.layout << " layout, " << info.backend << devices
              << ") in " << seconds << " s\n";
  }
}

std::unique_ptr<Engine> load_engine(const EngineArgs& a) {
  check_engine_args(a);
  const std::filesystem::path dir = resolve_model_dir(a.model);
  std::unique_ptr<Engine> engine = Engine::load(dir, engine_options(a));
  say_loaded(a, dir, engine->info());
  return engine;
}

}  // namespace voxrt::cli
