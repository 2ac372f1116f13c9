// config.toml (settings/settings.hpp): the text of the user's file, of any format.
//
// Properties: a refusal names the file, line and column; a file that parses renders to
// a current-format file that parses to the same settings (rendering that again gives the
// same text), so converting an older file never changes what it says.
#include "settings/settings.hpp"

#include "fuzz/fuzz_support.hpp"

#include <string>

namespace {
using handler::fuzz::check;
namespace settings = handler::settings;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = handler::fuzz::as_text(data, size);
    const auto parsed = settings::parse(text, "config.toml");
    if (!parsed) {
        check(parsed.error().message.starts_with("config.toml:"), "a refusal names the file and line",
              parsed.error().message);
        return 0;
    }
    const std::string rendered = settings::render(parsed->settings, parsed->explicit_keys);
    const auto again = settings::parse(rendered, "config.toml");
    check(again.ok(), "a rendered file parses", again ? rendered : again.error().message + "\n" + rendered);
    check(again->format == settings::kCurrentFormat, "a rendered file is of the current format", rendered);
    check(settings::render(again->settings, again->explicit_keys) == rendered,
          "a rendered file parses to the same settings", rendered);
    return 0;
}
