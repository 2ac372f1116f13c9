// The key redactor and the stand-in scanner on plain streams (network/secret_binding.hpp):
// an intercepted response on its way back to the container, and the bytes of a request
// on their way out. Input: keys, then the stream (fuzz/secret_input.hpp).
//
// Properties: the redacted stream is as long as the input, however it is split; every
// real key the input holds is masked where it was; with '*' masks no real key is left
// anywhere, and with one such key the split stream is redacted as the whole is (a stand-in
// as the mask may complete a key with bytes that went out before it); the scanner
// reports a stand-in exactly when the stream holds one not bound to the host, whatever
// the split, and never one that is bound to it.
#include "network/secret_binding.hpp"

#include "fuzz/fuzz_support.hpp"
#include "fuzz/secret_input.hpp"

#include <string>

namespace {

using handler::fuzz::check;
using handler::fuzz::SecretInput;
using namespace handler::network;

constexpr std::string_view kHost = SecretInput::kHost;

void check_redactor(const SecretInput& input) {
    KeyRedactor redactor = input.redactor();
    std::string out;
    for (const auto piece : handler::fuzz::pieces_of(input.bytes)) out.append(redactor.feed(piece));
    out.append(redactor.feed({}, true));
    check(out.size() == input.bytes.size(), "the redacted stream is as long as the input");
    for (const auto& key : input.keys) {
        for (const std::size_t at : handler::fuzz::occurrences(input.bytes, key.real))
            check(out.compare(at, key.real.size(), key.real) != 0, "a real key in the input is masked", key.real);
        if (input.masks_are_stars())
            check(out.find(key.real) == std::string::npos, "no real key is left in the redacted stream", key.real);
    }
    if (input.keys.size() == 1 && input.masks_are_stars())
        check(out == input.redactor().redact(input.bytes), "with one key, the split stream is redacted as the whole");
}

void check_scanner(const SecretInput& input) {
    const std::vector<SecretBinding> bindings = input.bindings();
    StandInScanner scanner(bindings, kHost);
    const SecretBinding* found = nullptr;
    for (const auto piece : handler::fuzz::pieces_of(input.bytes))
        if ((found = scanner.feed(piece)) != nullptr) break;
    const SecretBinding* whole = StandInScanner(bindings, kHost).find_in(input.bytes);
    check((found != nullptr) == (whole != nullptr), "a stand-in is found however the stream is split");
    if (found) check(!found->bound_to(kHost), "a stand-in bound to the host is never reported", found->name);
    bool present = false;
    for (const auto& binding : bindings)
        present = present || (!binding.bound_to(kHost) && input.bytes.find(binding.stand_in) != std::string_view::npos);
    check(present == (whole != nullptr), "a stand-in headed elsewhere is reported exactly when it is there");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const SecretInput input = handler::fuzz::read_secret_input(handler::fuzz::as_text(data, size));
    check_redactor(input);
    check_scanner(input);
    return 0;
}
