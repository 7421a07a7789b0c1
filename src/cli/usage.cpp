#include "cli/usage.h"

#include <cctype>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/nearest_name.h"

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

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

std::string command_list(CLI::App& app) {
  std::string list;
  for (const std::string& name : command_names(app)) list += (list.empty() ? "" : ", ") + name;
  return list;
}

// The long options (and short ones) a command takes, as they are typed.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// " (did you mean --format?)" when `typed` is a slip for one of `names`, else "".
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& names) {
  const std::optional<std::string> near = nearest_name(typed.substr(0, typed.find('=')), names);
  return near ? " (did you mean " + *near + "?)" : "";
}

// CLI11's messages, reworded where they are unclear to someone who did not write the command.
std::string describe(const CLI::ParseError& e, const CLI::App& command) {
  std::string m = e.what();
  constexpr std::string_view kExtra1 = "The following argument was not expected: ";
  constexpr std::string_view kExtraN = "The following arguments were not expected: ";
  constexpr std::string_view kConvert = "Could not convert: ";
  if (starts_with(m, kExtra1) || starts_with(m, kExtraN)) {
    const std::string args = m.substr(starts_with(m, kExtra1) ? kExtra1.size() : kExtraN.size());
    if (starts_with(args, "-")) return "unknown option " + args + did_you_mean(args.substr(0, args.find(' ')), option_names(command));
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

void add_help_command(CLI::App& app) {
  auto command = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("help", "Show what voxrt does, or the options of one command (voxrt help transcribe)");
  cmd->add_option("command", *command, "The command whose options to show");
  cmd->callback([&app, command] {
    // Through the formatter: App::help() would describe the command running now, `help` itself.
    if (command->empty()) {
      std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return;
    }
    for (CLI::App* sub : app.get_subcommands({}))
      if (sub->check_name(*command)) {
        std::cout << sub->help(app.get_name());
        return;
      }
    throw UsageError("help " + *command + ": no such command" + did_you_mean(*command, command_names(app)) + " (one of " +
                     command_list(app) + ")");
  });
}

int run_command_line(CLI::App& app, int argc, char** argv) {
  // `voxrt` alone: what it can do, as `voxrt help` says.
  if (argc < 2) {
    std::cout << app.help();
    return 0;
  }
  // CLI11 answers an unknown subcommand with "A subcommand is required"; say which, and what was meant.
  const std::string first = argv[1];
  if (!starts_with(first, "-") && named_subcommand(app, argc, argv) == nullptr)
    return report_usage("unknown command '" + first + "'" + did_you_mean(first, command_names(app)) + " (one of " +
                            command_list(app) + ")",
                        "voxrt --help");

  CLI::App* sub = named_subcommand(app, argc, argv);
  const std::string help = sub && sub->get_name() != "help" ? "voxrt " + sub->get_name() + " --help" : "voxrt --help";
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    if (sub == nullptr && starts_with(first, "-") && first != "--help" && first != "-h")
      return report_usage("unknown option " + first + did_you_mean(first, option_names(app)) + " (commands: " +
                              command_list(app) + ")",
                          help);
    return report_usage(describe(e, sub ? *sub : app), help);
  } catch (const UsageError& e) {
    return report_usage(e.what(), help);
  } catch (const std::exception& e) {
    std::cerr << "voxrt: error: " << e.what() << "\n";
    return kExitFailure;
  }
  return exit_status();
}

}  // namespace voxrt::cli
