// The WebSocket frame reader (FrameHead) under the two streams the proxy follows on an
// intercepted WebSocket (network/secret_binding.hpp): the client's frames, searched for
// stand-ins (WebSocketScanner), and the server's, whose real keys are masked
// (WebSocketRedactor). Input: keys, then frames (fuzz/secret_input.hpp), split anywhere.
//
// Both are checked against a reader written here from RFC 6455, which reassembles the
// messages as the peer does: a message is its data frames up to the one with FIN, and a
// control frame (opcode 8 and up), which may come between them, is a message of its own.
// Properties: a frame with a reserved bit makes the stream unreadable, and then nothing
// more goes on; frame heads go on unchanged and the redacted stream is as long as the
// input once a data frame with FIN ends it; every real key a message holds is masked, and with
// '*' masks no message holds one; a message that holds a stand-in not bound to the host is
// reported, and a report means the data frames' payloads, or the control frames', hold one.
#include "network/secret_binding.hpp"

#include "fuzz/fuzz_support.hpp"
#include "fuzz/secret_input.hpp"

#include <string>
#include <vector>

namespace {

using handler::fuzz::check;
using handler::fuzz::SecretInput;
using namespace handler::network;

constexpr std::string_view kHost = SecretInput::kHost;

struct Frame {
    std::size_t head_at = 0;
    std::size_t payload_at = 0;
    std::uint64_t length = 0;
    bool fin = false;
    bool reserved = false;
    bool control = false;
    bool masked = false;
    unsigned char mask[4] = {};

    // Just past the payload's last byte in a stream of `size` bytes (lengths go to 2^64).
    std::size_t payload_end(std::size_t size) const {
        return payload_at + static_cast<std::size_t>(std::min<std::uint64_t>(length, size - payload_at));
    }
    unsigned char mask_at(std::size_t at) const { return masked ? mask[(at - payload_at) % 4] : 0; }
};

// The frames whose head is whole, in order; the last one's payload may be cut short.
std::vector<Frame> frames_of(std::string_view bytes) {
    std::vector<Frame> frames;
    std::size_t at = 0;
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
    while (bytes.size() - at >= 2) {
        Frame frame;
        frame.head_at = at;
        frame.fin = (byte(at) & 0x80) != 0;
        frame.reserved = (byte(at) & 0x70) != 0;
        frame.control = (byte(at) & 0x08) != 0;
        frame.masked = (byte(at + 1) & 0x80) != 0;
        const unsigned length7 = byte(at + 1) & 0x7f;
        const std::size_t extended = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
        const std::size_t head = 2 + extended + (frame.masked ? 4 : 0);
        if (bytes.size() - at < head) break;
        frame.length = length7;
        if (extended > 0) {
            frame.length = 0;
            for (std::size_t i = 0; i < extended; ++i) frame.length = (frame.length << 8) | byte(at + 2 + i);
        }
        for (std::size_t i = 0; frame.masked && i < 4; ++i) frame.mask[i] = byte(at + 2 + extended + i);
        frame.payload_at = at + head;
        frames.push_back(frame);
        if (frame.reserved || bytes.size() - frame.payload_at < frame.length) break;
        at = frame.payload_at + static_cast<std::size_t>(frame.length);
    }
    return frames;
}

// A message's payload bytes: where each is in the stream, and its mask byte.
struct Message {
    std::vector<std::size_t> positions;
    std::vector<unsigned char> masks;

    std::string plain(std::string_view stream) const {
        std::string text;
        for (std::size_t i = 0; i < positions.size() && positions[i] < stream.size(); ++i)
            text.push_back(static_cast<char>(stream[positions[i]] ^ masks[i]));
        return text;
    }
};

// The messages as the peer reassembles them, up to a frame with a reserved bit.
std::vector<Message> messages_of(std::string_view bytes, const std::vector<Frame>& frames) {
    std::vector<Message> messages;
    Message data;
    for (const Frame& frame : frames) {
        if (frame.reserved) break;
        Message control;
        Message& into = frame.control ? control : data;
        for (std::size_t at = frame.payload_at; at < frame.payload_end(bytes.size()); ++at) {
            into.positions.push_back(at);
            into.masks.push_back(frame.mask_at(at));
        }
        if (frame.control) messages.push_back(std::move(control));
        else if (frame.fin) messages.push_back(std::exchange(data, {}));
    }
    if (!data.positions.empty()) messages.push_back(std::move(data));
    return messages;
}

bool stream_is_unreadable(const std::vector<Frame>& frames) {
    return !frames.empty() && frames.back().reserved;
}

void check_redactor(const SecretInput& input, const std::vector<Frame>& frames) {
    WebSocketRedactor redactor(input.redactor());
    std::string out;
    bool unreadable = false;
    for (const auto piece : handler::fuzz::pieces_of(input.bytes)) {
        out.append(redactor.feed(piece));
        if ((unreadable = redactor.unreadable())) break;
    }
    check(unreadable == stream_is_unreadable(frames), "a frame with a reserved bit makes the stream unreadable");
    check(out.size() <= input.bytes.size(), "nothing is added to the stream");
    if (unreadable) {
        check(redactor.feed("more").empty(), "nothing goes on once the stream is unreadable");
        return;
    }
    for (const Frame& frame : frames)
        for (std::size_t at = frame.head_at; at < frame.payload_at && at < out.size(); ++at)
            check(out[at] == input.bytes[at], "frame heads go on unchanged");
    if (!frames.empty()) {
        const Frame& last = frames.back();
        // (After a control frame, bytes of the message it interrupted may still be held.)
        if (last.fin && !last.control && last.length == input.bytes.size() - last.payload_at)
            check(out.size() == input.bytes.size(), "a stream whose last message is whole all goes on");
    }
    for (const Message& message : messages_of(input.bytes, frames)) {
        const std::string before = message.plain(input.bytes);
        const std::string after = message.plain(out);
        for (const auto& key : input.keys) {
            for (const std::size_t at : handler::fuzz::occurrences(before, key.real))
                if (at + key.real.size() <= after.size())
                    check(after.compare(at, key.real.size(), key.real) != 0, "a real key in a message is masked",
                          key.real);
            if (input.masks_are_stars())
                check(after.find(key.real) == std::string::npos, "no message holds a real key", key.real);
        }
    }
}

void check_scanner(const SecretInput& input, const std::vector<Frame>& frames) {
    const std::vector<SecretBinding> bindings = input.bindings();
    WebSocketScanner scanner(StandInScanner(bindings, kHost));
    const SecretBinding* found = nullptr;
    bool unreadable = false;
    for (const auto piece : handler::fuzz::pieces_of(input.bytes)) {
        found = scanner.feed(piece);
        unreadable = scanner.unreadable();
        if (found || unreadable) break;
    }
    if (found) check(!found->bound_to(kHost), "a stand-in bound to the host is never reported", found->name);
    if (unreadable) {
        check(stream_is_unreadable(frames), "only a frame with a reserved bit makes the stream unreadable");
        return;
    }
    const auto messages = messages_of(input.bytes, frames);
    // The data frames' payloads joined, and the control frames'.
    std::string payloads[2];
    for (const Frame& frame : frames)
        for (std::size_t at = frame.payload_at; at < frame.payload_end(input.bytes.size()); ++at)
            payloads[frame.control].push_back(static_cast<char>(input.bytes[at] ^ frame.mask_at(at)));
    if (found)
        check(payloads[0].find(found->stand_in) != std::string::npos ||
                  payloads[1].find(found->stand_in) != std::string::npos,
              "a reported stand-in is in the payloads");
    for (const Message& message : messages) {
        const std::string plain = message.plain(input.bytes);
        for (const auto& binding : bindings)
            if (!binding.bound_to(kHost) && plain.find(binding.stand_in) != std::string::npos)
                check(found != nullptr, "a message holding a stand-in headed elsewhere is reported", binding.stand_in);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const SecretInput input = handler::fuzz::read_secret_input(handler::fuzz::as_text(data, size));
    const auto frames = frames_of(input.bytes);
    check_redactor(input, frames);
    check_scanner(input, frames);
    return 0;
}
