#include "cli/usage.h"

#include <cctype>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"

namespace voxrt::cli {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The subcommand the arguments name (the first argument that is one), or nullptr.
CLI::App* named_subcommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (CLI::App* sub : app.get_subcommands({}))
      if (sub->check_name(argv[i])) return sub;
  return nullptr;
}

std::string command_list(CLI::App& app) {
  std::string names;
  for (CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// CLI11's messages, reworded where they are unclear to someone who did not write the command.
std::string describe(const CLI::ParseError& e) {
  std::string m = e.what();
  constexpr std::string_view kExtra1 = "The following argument was not expected: ";
  constexpr std::string_view kExtraN = "The following arguments were not expected: ";
  constexpr std::string_view kConvert = "Could not convert: ";
  if (starts_with(m, kExtra1) || starts_with(m, kExtraN)) {
    const std::string args = m.substr(starts_with(m, kExtra1) ? kExtra1.size() : kExtraN.size());
    if (starts_with(args, "-")) return "unknown option " + args;
    return "unexpected argument " + args;
  }
  if (starts_with(m, kConvert)) {
    // "Could not convert: --threads = abc"
    std::string rest = m.substr(kConvert.size());
    const size_t eq = rest.find(" = ");
    if (eq != std::string::npos) return rest.substr(0, eq) + " " + rest.substr(eq + 3) + ": not a number";
    return rest + ": not a number";
  }
  if (!m.empty()) m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return m;
}

int report_usage(const std::string& message, const std::string& help) {
  std::cerr << "voxrt: error: " << message << "\n" << "voxrt: see `" << help << "`\n";
  return kExitUsage;
}

}  // namespace

int run_command_line(CLI::App& app, int argc, char** argv) {
  // CLI11 answers both a missing and an unknown subcommand with "A subcommand is required"; say which.
  if (argc < 2) return report_usage("no command given (one of " + command_list(app) + ")", "voxrt --help");
  const std::string first = argv[1];
  if (!starts_with(first, "-") && named_subcommand(app, argc, argv) == nullptr)
    return report_usage("unknown command '" + first + "' (one of " + command_list(app) + ")", "voxrt --help");

  CLI::App* sub = named_subcommand(app, argc, argv);
  const std::string help = sub ? "voxrt " + sub->get_name() + " --help" : "voxrt --help";
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    if (sub == nullptr && starts_with(first, "-") && first != "--help" && first != "-h")
      return report_usage("unknown option " + first + " (commands: " + command_list(app) + ")", help);
    return report_usage(describe(e), help);
  } catch (const UsageError& e) {
    return report_usage(e.what(), help);
  } catch (const std::exception& e) {
    std::cerr << "voxrt: error: " << e.what() << "\n";
    return kExitFailure;
  }
  return exit_status();
}

}  // namespace voxrt::cli
