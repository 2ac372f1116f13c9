// What Handler knows about each kind of credential (docs/network.md, "Keys"): which hosts
// a key may travel to, where in a request it goes, and what its stand-in looks like.
// A session never gets the real value: it gets a stand-in of the same shape (so a
// harness's format check passes), and the egress proxy puts the real value into the
// bound header of requests to these hosts only. This is provider knowledge, not a
// harness's: Claude Code and pi use the same Anthropic key the same way.
#pragma once

#include "core/result.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::secrets {

struct Provider {
    std::string_view kind;               // the account kind (store/validation.hpp)
    std::vector<std::string_view> hosts; // exact names the key may go to
    std::string_view header;             // where it goes ("x-api-key", "authorization")
    std::string_view value_prefix;       // before the key in that header ("Bearer ")
};

// nullptr for kinds that hold no key to swap (logins kept in a volume, local servers).
const Provider* provider_for(std::string_view kind);
const std::vector<Provider>& providers();

// A key as pasted: printable ASCII without spaces, 8 to 4096 bytes, surrounding
// whitespace (the newline of `echo KEY |`) removed. The message never quotes the value.
Result<std::string> normalize_secret(std::string_view value);

// Random bytes for stand-ins (OpenSSL's RAND_bytes in handlerd; fixed in tests).
using RandomBytes = std::function<void(unsigned char* out, std::size_t size)>;
RandomBytes system_random();

// The stand-in for `real`: its prefix up to the last '-' within the first 24 characters
// ("sk-ant-api03-", "sk-or-v1-", "sk-"), then random letters and digits up to the same
// length. Never equal to the real value.
std::string make_stand_in(std::string_view real, const RandomBytes& random);

} // namespace handler::secrets
