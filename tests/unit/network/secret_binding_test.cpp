// What the fuzz targets found in network/secret_binding.hpp: a mask that completes a key
// again, and what RFC 6455 allows a peer to send, a control frame (ping, pong, close)
// between the fragments of a message. The rest of its tests are with the proxy's
// interception, in interception_test.cpp.
#include "network/secret_binding.hpp"

#include <gtest/gtest.h>

#include <string>

namespace handler::network {
namespace {

const std::string kReal = "sk-ant-api03-REALKEY0123456789";
const std::string kStandIn = "sk-ant-api03-STANDIN0123456789"; // as long as the key: the mask

constexpr int kText = 0x1, kContinuation = 0x0, kPing = 0x9;

// One frame of at most 125 bytes; masked (as a client sends it) with `mask` when set.
std::string frame(int opcode, std::string_view payload, bool fin, const char* mask = nullptr) {
    std::string out(1, static_cast<char>((fin ? 0x80 : 0x00) | opcode));
    out += static_cast<char>((mask ? 0x80 : 0x00) | payload.size());
    if (mask) out.append(mask, 4);
    for (std::size_t i = 0; i < payload.size(); ++i)
        out += static_cast<char>(payload[i] ^ (mask ? mask[i % 4] : 0));
    return out;
}

// Found by tests/fuzz/fuzz_redactor: a mask (the stand-in) whose end is the start of the
// key completed the key again with the bytes after it, so the redacted text held the key
// ("ababab" became "xxabab" for the key "abab" and the stand-in "xxab").
TEST(KeyRedactor, AMaskThatCompletesAKeyAgainLeavesNoKey) {
    KeyRedactor whole;
    whole.add("abab", "xxab");
    EXPECT_EQ(whole.redact("ababab"), "xx****");
    EXPECT_EQ(whole.redact("abab abab"), "xxab xxab") << "a stand-in alone is the mask";

    KeyRedactor split;
    split.add("abab", "xxab");
    std::string out;
    for (const std::string_view piece : {"a", "ba", "bab", " ab", "ab"}) out += split.feed(piece);
    out += split.feed("", true);
    EXPECT_EQ(out, "xx**** xxab");
}

// Found by tests/fuzz/fuzz_websocket's reader, which joins fragments as a client does: a
// ping between two fragments ended the search for a key, so a key cut around it reached
// the container whole once the client joined the fragments.
TEST(WebSocketRedactor, AKeyCutAroundAControlFrameIsMaskedToo) {
    KeyRedactor keys;
    keys.add(kReal, kStandIn);
    const std::string stream = frame(kText, "error " + kReal.substr(0, 10), false) + frame(kPing, "hi", true) +
                               frame(kContinuation, kReal.substr(10) + " end", true);
    const std::string expected = frame(kText, "error " + kStandIn.substr(0, 10), false) + frame(kPing, "hi", true) +
                                 frame(kContinuation, kStandIn.substr(10) + " end", true);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{3}, stream.size()}) {
        WebSocketRedactor redactor(keys);
        std::string out;
        for (std::size_t at = 0; at < stream.size(); at += piece) out += redactor.feed(stream.substr(at, piece));
        EXPECT_EQ(out, expected) << "in pieces of " << piece;
    }

    // A control frame is a message of its own: a key in it is masked there.
    WebSocketRedactor redactor(keys);
    EXPECT_EQ(redactor.feed(frame(kText, "a", false) + frame(0xa, kReal, true) + frame(kContinuation, "b", true)),
              frame(kText, "a", false) + frame(0xa, kStandIn, true) + frame(kContinuation, "b", true));
}

// The same cut in a client's frames hid a stand-in from the scanner: it joined the ping's
// payload into the message's.
TEST(WebSocketScanner, AStandInCutAroundAControlFrameIsFound) {
    const std::vector<SecretBinding> bindings{{"anthropic-api-key", kStandIn, {"api.anthropic.com"}, "x-api-key", "", 1}};
    const char mask[] = "\x12\x34\x56\x78";
    const std::string stream = frame(kText, "{\"k\":\"" + kStandIn.substr(0, 10), false, mask) +
                               frame(kPing, "xx", true, mask) + frame(kContinuation, kStandIn.substr(10) + "\"}", true, mask);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{5}, stream.size()}) {
        WebSocketScanner scanner(StandInScanner(bindings, "api.openai.com"));
        const SecretBinding* found = nullptr;
        for (std::size_t at = 0; at < stream.size() && !found; at += piece) found = scanner.feed(stream.substr(at, piece));
        ASSERT_NE(found, nullptr) << "in pieces of " << piece;
        EXPECT_EQ(found->name, "anthropic-api-key");
    }
}

} // namespace
} // namespace handler::network
