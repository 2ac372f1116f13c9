// Every kind of account Handler knows, in one table (docs/domain-model.md, "Accounts";
// docs/network.md, "Keys"): what the CLI calls it, what it holds, which hosts a key of it
// may travel to and where in a request it goes, or where a local server listens.
// A session never gets a real key: it gets a stand-in of the same shape (so a harness's
// format check passes), and the egress proxy puts the real value into the bound header
// of requests to the kind's hosts only. This is provider knowledge, not a harness's:
// Claude Code and pi use the same Anthropic key the same way.
#pragma once

#include "core/result.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::secrets {

// What an account of a kind holds.
enum class Holds {
    key = 1,      // a key handlerd keeps and the proxy swaps in (a stand-in in the session)
    login,        // a harness's own login, kept in the account's folder
    local_server, // nothing secret: a model server the user runs, reached at a base URL
};

struct AccountKind {
    std::string_view kind;       // the stored id ("anthropic-api-key")
    std::string_view short_name; // an account name that picks this kind ("anthropic"), or ""
    std::string_view label;      // for people ("Anthropic API key")
    Holds holds = Holds::key;
    // Holds::key only: the exact names the key may go to, the header it goes in
    // ("x-api-key", "authorization") and what comes before it there ("Bearer ").
    std::vector<std::string_view> hosts;
    std::string_view header;
    std::string_view value_prefix;
    // Holds::local_server only: where the server listens unless told otherwise.
    std::string_view default_base_url;
};

// The table, in the order people are shown it.
const std::vector<AccountKind>& account_kinds();
// nullptr for a kind not in the table.
const AccountKind* find_account_kind(std::string_view kind);
// The kind an account named `name` gets when no kind is given ("claude" ->
// claude-subscription); nullptr when the name picks none.
const AccountKind* account_kind_for_short_name(std::string_view name);
// The kinds that hold `holds`, or every kind, joined for a message ("a, b and c").
std::string account_kind_names(std::optional<Holds> holds = std::nullopt);
// The short names, joined the same way ("anthropic, claude, ... and ollama").
std::string account_short_names();
// Each local server kind and its default ("llama-cpp at http://127.0.0.1:8080 and ...").
std::string local_server_defaults();

// The kind when it holds a key to swap; nullptr for logins, local servers and unknown kinds.
const AccountKind* provider_for(std::string_view kind);
// Local model servers the user runs (llama-cpp, ollama): reached at a base URL, no key.
bool is_local_server(std::string_view kind);
// Where a local server of `kind` listens unless told otherwise ("http://127.0.0.1:11434"
// for ollama); empty for every other kind.
std::string_view default_base_url(std::string_view kind);

// A key as pasted: printable ASCII without spaces or '*', 8 to 4096 bytes, surrounding
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
