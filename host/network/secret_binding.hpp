// What the egress proxy knows of a session's keys (docs/network.md, "Keys"): for each,
// the stand-in the session holds, the hosts the real value may go to and the header it
// goes in. The real value is asked for only when a request to one of those hosts needs
// it, and never kept by the proxy.
#pragma once

#include "core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::network {

struct SecretBinding {
    std::string name;               // the key's kind ("anthropic-api-key"): logs, errors
    std::string stand_in;           // what the session holds in place of the key
    std::vector<std::string> hosts; // exact lower-case names the real value may go to
    std::string header;             // lower case ("x-api-key", "authorization")
    std::string value_prefix;       // before the key in that header ("Bearer ")
    std::int64_t account_id = 0;

    bool bound_to(std::string_view host) const;
};

// One session's keys. Asked on every connection, so a key added or changed while the
// session runs applies to its next request.
class SecretSource {
public:
    virtual ~SecretSource() = default;
    virtual std::vector<SecretBinding> bindings() = 0;
    // The real value; an error (logged, and the request refused) when it cannot be read.
    virtual Result<std::string> real_value(const SecretBinding& binding) = 0;
};

// Looks for a session's stand-ins in bytes on their way out of the container, where no
// stand-in may appear: a stand-in is only ever needed by its own hosts, so one headed
// anywhere else is an attempt to carry it off. A stand-in may straddle two chunks, so
// the last (longest stand-in - 1) bytes already passed are kept to look across the
// seam. Nothing is held back (a protocol waiting for its last bytes' answer would hang),
// so at most the first part of a stand-in gets out before the connection is cut: never
// all of it, and a stand-in is worthless anywhere but at the proxy anyway.
class StandInScanner {
public:
    StandInScanner() = default;
    // The stand-ins of `bindings` not bound to `host`.
    StandInScanner(const std::vector<SecretBinding>& bindings, std::string_view host);

    bool active() const { return !patterns_.empty(); }
    // The binding whose stand-in `chunk` completes, if any; then send nothing more.
    const SecretBinding* feed(std::string_view chunk);
    // One whole piece (a request head): the binding whose stand-in it holds, if any.
    const SecretBinding* find_in(std::string_view text) const;

private:
    std::vector<SecretBinding> patterns_;
    std::size_t keep_ = 0;
    std::string window_;
};

// A WebSocket frame's head (RFC 6455), read a byte at a time from any split of the stream:
// 2 bytes, then 2 or 8 of length, then 4 of mask when masked.
class FrameHead {
public:
    // Takes one byte; true once the head is whole (then the accessors hold, until the
    // next add() starts another head).
    bool add(unsigned char byte);
    std::uint64_t length() const { return length_; }
    bool fin() const { return (bytes_[0] & 0x80) != 0; }
    // A reserved bit: compressed (or otherwise transformed) though no extension was agreed.
    bool reserved() const { return (bytes_[0] & 0x70) != 0; }
    bool masked() const { return (bytes_[1] & 0x80) != 0; }
    // Ping, pong or close: never fragmented, and it may come between the fragments of a
    // message, whose payload goes on after it (RFC 6455 5.4, 5.5).
    bool control() const { return (bytes_[0] & 0x08) != 0; }
    const unsigned char* mask() const { return mask_; }

private:
    unsigned char bytes_[14] = {};
    std::size_t size_ = 0;
    std::uint64_t length_ = 0;
    unsigned char mask_[4] = {};
};

// The WebSocket frames a client sends (RFC 6455) are masked with a key of their own, so a
// stand-in in them cannot be seen in the raw bytes. This follows the frames through any
// split of the stream and hands the unmasked payloads, in order, to a StandInScanner: the
// data frames' to one, as the server joins them, and the control frames' to another, so
// a ping between two fragments does not hide a stand-in cut around it.
// (The proxy asks for no compression when it opens a WebSocket, so payloads are plain.)
class WebSocketScanner {
public:
    explicit WebSocketScanner(StandInScanner scanner) : scanner_(std::move(scanner)), control_scanner_(scanner_) {}
    bool active() const { return scanner_.active(); }
    // The binding whose stand-in the payloads in `chunk` complete, if any.
    const SecretBinding* feed(std::string_view chunk);
    // A frame with a reserved bit set came: compressed (or otherwise transformed) though
    // no extension was agreed, so its payload cannot be searched. It must not go on.
    bool unreadable() const { return unreadable_; }

private:
    StandInScanner scanner_;
    StandInScanner control_scanner_;
    FrameHead head_;
    std::uint64_t payload_left_ = 0;
    std::uint64_t mask_at_ = 0;
    bool unreadable_ = false;
    std::string plain_;
};

// The other direction: real keys in bytes going back to the container (an upstream's
// error message that quotes the key it got) are replaced by a mask of the same length,
// the key's stand-in when it has that length, so lengths and framing stay intact and the
// agent still never sees a real value. Only bytes that could be the start of a key are
// held back, until the next chunk (or the end) shows whether they are.
class KeyRedactor {
public:
    // Masks of another length are made of this byte. A real key that holds it could be
    // completed by a mask and what follows it, and on a stream cut anywhere that is not
    // always caught: such a key is refused where keys come in (normalize_secret) and never
    // sent (interception), so `add` only ever gets keys for which can_mask holds.
    static constexpr char kMaskByte = '*';
    static bool can_mask(std::string_view real) { return real.find(kMaskByte) == std::string_view::npos; }

    void add(std::string real, const std::string& stand_in);
    bool active() const { return !keys_.empty(); }
    std::string_view feed(std::string_view chunk, bool last = false);
    std::string redact(std::string_view whole) const;

private:
    void replace_in(std::string& text) const;
    std::vector<std::pair<std::string, std::string>> keys_; // real, mask
    std::size_t keep_ = 0;
    std::string held_;
    std::string out_;
};

// KeyRedactor for the frames a server sends on a WebSocket: real keys in their payloads
// are masked in place (same length, so the framing stays as it is), whatever the split of
// the stream and across the frames of one message. Bytes that could start a key are held
// back until the next chunk shows whether they do, never past the end of a message. A
// control frame is a message of its own and is searched on its own; one that comes while
// a message's bytes are held waits behind them (bytes cannot pass each other).
class WebSocketRedactor {
public:
    explicit WebSocketRedactor(KeyRedactor redactor) : data_{std::move(redactor), {}}, control_{data_.redactor, {}} {}
    bool active() const { return data_.redactor.active(); }
    // What may go on to the client now, `chunk` included as far as it can be.
    std::string_view feed(std::string_view chunk);
    // A frame was compressed though no compression was agreed: its payload cannot be
    // searched, and nothing more may go on.
    bool unreadable() const { return unreadable_; }

private:
    // The data messages' payloads, or the control frames'.
    struct Payloads {
        KeyRedactor redactor;
        // Where in raw_ the payload bytes the redactor holds are, and their frame's mask
        // byte (0 unmasked: a server's frames should be, but one that masks is read all
        // the same).
        std::vector<std::pair<std::size_t, char>> pending;
    };
    void place(Payloads& payloads, std::string_view redacted);

    Payloads data_;
    Payloads control_;
    FrameHead head_;
    bool in_payload_ = false;
    std::uint64_t payload_left_ = 0;
    std::uint64_t mask_at_ = 0;
    bool unreadable_ = false;
    std::string raw_; // held bytes, then the chunk
    std::string plain_;
    std::string out_;
};

} // namespace handler::network
