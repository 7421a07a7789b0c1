#include "turns/turn_set.h"

#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "audio/audio_file.h"

namespace voxrt::turnset {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

}  // namespace

std::vector<float> read_mono_16k(const std::filesystem::path& path) {
  DecodedAudio audio = read_audio_file(path);
  if (audio.sample_rate != 16000 || audio.channels != 1) throw std::runtime_error(path.string() + ": not 16 kHz mono");
  return std::move(audio.samples);
}

double mean_power(const float* x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return n == 0 ? 0.0 : sum / static_cast<double>(n);
}

std::vector<Recording> load_turn_set(const std::filesystem::path& dir) {
  const nlohmann::json set = read_json(dir / "set.json");
  std::map<std::string, std::vector<float>> noises;
  for (const auto& [kind, file] : set.at("noises").items()) noises[kind] = read_mono_16k(dir / file.get<std::string>());
  std::vector<Recording> out;
  for (const nlohmann::json& r : set.at("recordings")) {
    Recording rec;
    rec.conversation = r.at("conversation").get<std::string>();
    const nlohmann::json label = read_json(dir / (rec.conversation + ".json"));
    rec.samples = read_mono_16k(dir / label.at("audio").get<std::string>());
    for (const nlohmann::json& t : label.at("turns")) rec.turns.push_back({t.at("start_ms").get<double>(), t.at("end_ms").get<double>()});
    rec.noise = r.at("noise").is_null() ? "none" : r.at("noise").get<std::string>();
    rec.name = rec.conversation + " " + (rec.noise == "none" ? "clean" : rec.noise);
    if (rec.noise != "none") {
      rec.snr_db = r.at("snr_db").get<double>();
      // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) about " " + std::string&&.
      rec.name += ' ';
      rec.name += std::to_string(std::lround(*rec.snr_db));
      rec.name += " dB";
      const std::vector<float>& noise = noises.at(rec.noise);
      if (noise.size() < rec.samples.size()) throw std::runtime_error(rec.noise + " noise is shorter than " + rec.conversation);
      // SNR: the speech's mean power (over its utterances, as the script measured it) over the
      // noise's, over the samples mixed.
      const double speech_power = std::pow(10.0, label.at("speech_rms_dbfs").get<double>() / 10.0);
      const double gain = std::sqrt(speech_power / std::pow(10.0, *rec.snr_db / 10.0) / mean_power(noise.data(), rec.samples.size()));
      for (size_t i = 0; i < rec.samples.size(); ++i) rec.samples[i] += static_cast<float>(gain * noise[i]);
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace voxrt::turnset
