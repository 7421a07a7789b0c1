// The voxrt subcommands. Each add_* registers a subcommand whose callback runs it; failures throw
// (reported by main) or set the exit status for partial failures (one of several inputs).
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace voxrt::cli {

void add_transcribe_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_decode_audio_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_stream_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_quantize_command(CLI::App& app);

// The directory `voxrt pull` writes to for the default repository; used when --model is omitted.
std::filesystem::path resolve_model_dir(const std::string& model_option);

void set_exit_status(int status);
int exit_status();

}  // namespace voxrt::cli
