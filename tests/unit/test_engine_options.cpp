// The public options' names and rules (include/voxrt/engine_options.h, include/voxrt/delays.h):
// every name parses back to its value, every other name and every value outside a rule is an
// OptionError naming its field, Engine::load checks the options before it reads anything, and a
// loaded model says the delays it accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "../test_paths.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/protocol.h"

namespace voxrt::test {
namespace {

// The OptionError `f` throws, or a failure.
OptionError option_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const OptionError& e) {
    return e;
  }
  ADD_FAILURE() << "no OptionError";
  return OptionError("", "");
}

std::string message(const OptionError& e) { return e.what(); }

TEST(EngineOptionNames, EachValueParsesBackFromItsName) {
  for (Device d : {Device::Auto, Device::Cuda, Device::Cpu}) EXPECT_EQ(parse_device(to_string(d)), d);
  for (Layout l : {Layout::Auto, Layout::Mistral, Layout::Hf}) EXPECT_EQ(parse_layout(to_string(l)), l);
  for (KvCacheFormat k : {KvCacheFormat::Auto, KvCacheFormat::Bf16, KvCacheFormat::Fp8})
    EXPECT_EQ(parse_kv_cache_format(to_string(k)), k);
  EXPECT_EQ(to_string(Device::Cuda), "cuda");
  EXPECT_EQ(to_string(Layout::Hf), "hf");
  EXPECT_EQ(to_string(KvCacheFormat::Fp8), "fp8");
}

TEST(EngineOptionNames, OtherNamesAreRefusedNamingTheValueAndTheChoices) {
  OptionError e = option_error([] { parse_device("tpu"); });
  EXPECT_EQ(e.field(), "device");
  EXPECT_EQ(message(e), "device tpu: expected auto, cuda or cpu");
  e = option_error([] { parse_layout("gguf"); });
  EXPECT_EQ(message(e), "layout gguf: expected auto, mistral or hf");
  e = option_error([] { parse_kv_cache_format("fp4"); });
  EXPECT_EQ(e.field(), "kv_cache");
  EXPECT_EQ(message(e), "kv_cache fp4: expected auto, bf16 or fp8");
  EXPECT_THROW(parse_device("CPU"), OptionError);  // the names exactly
  EXPECT_THROW(parse_layout(""), OptionError);
}

TEST(EngineOptionNames, AnOptionErrorSaysItsMessageUnderAnotherName) {
  const OptionError e("draft_rows", " 40: expected 0 (automatic) to 32");
  EXPECT_EQ(e.renamed("--draft-rows"), "--draft-rows 40: expected 0 (automatic) to 32");
}

// Each rule: a value it refuses, the field named, and the start of the message.
struct Rule {
  const char* name;
  std::function<void(EngineOptions&)> set;
  const char* field;
  const char* message;
};

TEST(EngineOptionsValidate, TheDefaultsAndValuesAtTheLimitsPass) {
  EXPECT_NO_THROW(validate({}));
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_NO_THROW(validate({.device = Device::Cuda, .gpu = 3, .gpus = {0, 2}, .threads = cpus, .layout = Layout::Hf,
                            .draft_rows = EngineOptions::kMaxDraftRows, .max_sessions = 4, .max_memory_fraction = 1,
                            .max_session_seconds = EngineOptions::kMaxSessionSeconds, .kv_cache = KvCacheFormat::Fp8,
                            .overload_wait_ms = 0.5}));
  EXPECT_NO_THROW(validate({.device = Device::Cpu, .threads = 1, .max_memory = size_t{1} << 30}));
}

TEST(EngineOptionsValidate, EveryRuleNamesItsField) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Rule> rules = {
      {"a device outside the enum", [](EngineOptions& o) { o.device = static_cast<Device>(7); }, "device", "device 7: expected auto"},
      {"a layout outside the enum", [](EngineOptions& o) { o.layout = static_cast<Layout>(-1); }, "layout", "layout -1: expected auto"},
      {"a kv format outside the enum", [](EngineOptions& o) { o.kv_cache = static_cast<KvCacheFormat>(3); }, "kv_cache",
       "kv_cache 3: expected auto, bf16 or fp8"},
      {"fp8 caches on the CPU",
       [](EngineOptions& o) {
         o.device = Device::Cpu;
         o.kv_cache = KvCacheFormat::Fp8;
       },
       "kv_cache", "kv_cache fp8: the key/value cache storage is a GPU option"},
      {"bf16 caches on the CPU",
       [](EngineOptions& o) {
         o.device = Device::Cpu;
         o.kv_cache = KvCacheFormat::Bf16;
       },
       "kv_cache", "kv_cache bf16: the key/value cache storage is a GPU option"},
      {"a negative gpu", [](EngineOptions& o) { o.gpu = -1; }, "gpu", "gpu -1: expected a device index, 0 or more"},
      {"a negative device in gpus", [](EngineOptions& o) { o.gpus = {0, -2}; }, "gpus", "gpus: device -2: expected an index"},
      {"a device twice in gpus", [](EngineOptions& o) { o.gpus = {1, 0, 1}; }, "gpus", "gpus: device 1 given twice"},
      {"negative threads", [](EngineOptions& o) { o.threads = -5; }, "threads", "threads -5: expected 1 to "},
      {"more threads than CPUs", [cpus](EngineOptions& o) { o.threads = cpus + 1; }, "threads", "threads "},
      {"negative draft rows", [](EngineOptions& o) { o.draft_rows = -1; }, "draft_rows", "draft_rows -1: expected 0 (automatic) to 32"},
      {"too many draft rows", [](EngineOptions& o) { o.draft_rows = EngineOptions::kMaxDraftRows + 1; }, "draft_rows",
       "draft_rows 33: expected 0 (automatic) to 32"},
      {"negative max_sessions", [](EngineOptions& o) { o.max_sessions = -1; }, "max_sessions",
       "max_sessions -1: expected 0 (no limit) or more"},
      {"a fraction above 1", [](EngineOptions& o) { o.max_memory_fraction = 1.5; }, "max_memory_fraction",
       "max_memory_fraction 1.5: expected 0 to 1"},
      {"a negative fraction", [](EngineOptions& o) { o.max_memory_fraction = -0.1; }, "max_memory_fraction",
       "max_memory_fraction -0.1: expected 0 to 1"},
      {"a fraction that is no number", [nan](EngineOptions& o) { o.max_memory_fraction = nan; }, "max_memory_fraction",
       "max_memory_fraction "},
      {"max_memory and a fraction",
       [](EngineOptions& o) {
         o.max_memory = 1 << 30;
         o.max_memory_fraction = 0.5;
       },
       "max_memory", "max_memory and max_memory_fraction both given: give one"},
      {"negative session seconds", [](EngineOptions& o) { o.max_session_seconds = -1; }, "max_session_seconds",
       "max_session_seconds -1: expected 0 (no limit) to 10000000"},
      {"session seconds past the limit", [](EngineOptions& o) { o.max_session_seconds = 1e8; }, "max_session_seconds",
       "max_session_seconds 1e+08: expected 0 (no limit) to 10000000"},
      {"session seconds that are no number", [nan](EngineOptions& o) { o.max_session_seconds = nan; }, "max_session_seconds",
       "max_session_seconds "},
      {"no overload wait", [](EngineOptions& o) { o.overload_wait_ms = 0; }, "overload_wait_ms",
       "overload_wait_ms 0: expected more than 0"},
  };
  for (const Rule& r : rules) {
    EngineOptions o;
    r.set(o);
    const OptionError e = option_error([&] { validate(o); });
    EXPECT_EQ(e.field(), r.field) << r.name;
    EXPECT_EQ(message(e).rfind(r.message, 0), 0u) << r.name << ": " << message(e);
  }
}

TEST(EngineOptionsValidate, LoadChecksTheOptionsBeforeItReadsAnything) {
  const OptionError e = option_error([] { Engine::load("/no/such/model", {.draft_rows = 40}); });
  EXPECT_EQ(e.field(), "draft_rows");
  // Several devices go through the same check.
  EXPECT_EQ(option_error([] { Engine::load("/no/such/model", {.gpus = {0, 0}}); }).field(), "gpus");
}

TEST(ModelDelays, AreTheProtocolsDelays) {
  const DelayRange d = model_delays();
  EXPECT_EQ(d.min_ms, 80);
  EXPECT_EQ(d.max_ms, 1200);
  EXPECT_EQ(d.step_ms, 80);
  EXPECT_EQ(d.beyond_ms, std::vector<int>{2400});
  EXPECT_EQ(to_string(d), "80 to 1200 ms in steps of 80 ms, or 2400 ms");
  for (int ms = -100; ms <= 3000; ++ms) {
    bool protocol_takes = true;
    try {
      delay_tokens_from_ms(ms);
    } catch (const Error&) {
      protocol_takes = false;
    }
    EXPECT_EQ(d.accepts(ms), protocol_takes) << ms;
  }
}

TEST(ModelDelays, AnotherDelayIsRefusedNamingDelayMs) {
  EXPECT_NO_THROW(validate_delay_ms(480));
  EXPECT_NO_THROW(validate_delay_ms(2400));
  const OptionError e = option_error([] { validate_delay_ms(500); });
  EXPECT_EQ(e.field(), "delay_ms");
  EXPECT_EQ(message(e), "delay_ms 500: the model supports 80 to 1200 ms in steps of 80 ms, or 2400 ms");
  EXPECT_THROW(validate_delay_ms(0), OptionError);
  EXPECT_THROW(validate_delay_ms(2480), OptionError);
}

TEST(ModelDelays, ALoadedModelSaysItsDelaysAndRefusesOthersNamingDelayMs) {
  const auto engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1});
  const ModelInfo& info = engine->info();
  EXPECT_EQ(to_string(info.delays), to_string(model_delays()));
  EXPECT_TRUE(info.delays.accepts(info.default_delay_ms));
  const std::vector<float> audio(16000, 0.0f);
  EXPECT_EQ(option_error([&] { engine->transcribe(audio, {.delay_ms = 500}); }).field(), "delay_ms");
  EXPECT_EQ(option_error([&] { engine->open_session({.delay_ms = 500}); }).field(), "delay_ms");
}

}  // namespace
}  // namespace voxrt::test
