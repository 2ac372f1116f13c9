// The shim protocol (shim/include/handler/shim_protocol.hpp): the frames handlerd reads
// from a session's shim, which an agent can impersonate. Input: the bytes on the socket.
//
// Properties: FrameDecoder gives the same frames however the bytes are split, and fails
// the same way; once failed it stays failed and holds nothing; a frame it gives is of a
// known type and within kMaxPayload; every frame read plus what is still buffered is the
// whole input; a payload a decoder accepts encodes back to the same bytes.
#include <handler/shim_protocol.hpp>

#include "fuzz/fuzz_support.hpp"

#include <string>
#include <vector>

namespace {

using handler::fuzz::check;
namespace shim = handler::shim;

struct Decoded {
    std::vector<shim::Frame> frames;
    bool failed = false;
    std::size_t buffered = 0;
};

Decoded decode(const std::vector<std::string_view>& pieces) {
    shim::FrameDecoder decoder;
    Decoded out;
    for (const auto piece : pieces) {
        decoder.feed(piece);
        while (auto frame = decoder.next()) {
            check(!decoder.failed(), "no frame comes after a failure");
            out.frames.push_back(std::move(*frame));
        }
        if (decoder.failed()) {
            check(decoder.buffered() == 0 && !decoder.next(), "a failed decoder holds nothing and gives nothing");
            out.failed = true;
            return out;
        }
    }
    out.buffered = decoder.buffered();
    return out;
}

// The frame as its sender would have written it, from what the receiver decoded.
void check_round_trip(const shim::Frame& frame) {
    std::string again;
    switch (frame.type) {
    case shim::FrameType::hello:
        if (const auto hello = shim::decode_hello(frame.payload)) {
            check(hello->oldest <= hello->produced, "a hello's oldest byte is not past its produced ones");
            again = shim::encode_hello(*hello);
        }
        break;
    case shim::FrameType::output:
        if (const auto output = shim::decode_output(frame.payload))
            shim::append_output(again, output->offset, output->stream, output->data);
        break;
    case shim::FrameType::exit:
    case shim::FrameType::signal:
        if (const auto value = shim::decode_i32(frame.payload)) again = shim::encode_i32(frame.type, *value);
        break;
    case shim::FrameType::resume:
        if (const auto from = shim::decode_u64(frame.payload)) again = shim::encode_resume(*from);
        break;
    case shim::FrameType::resize:
        if (const auto size = shim::decode_resize(frame.payload)) {
            check(size->rows > 0 && size->cols > 0, "a size has rows and columns");
            again = shim::encode_resize(size->rows, size->cols);
        }
        break;
    case shim::FrameType::who:
        if (const auto who = shim::decode_who(frame.payload)) again = shim::encode_who(*who);
        break;
    case shim::FrameType::owner:
        // Container-made (a shim can be replaced by what runs beside it): every field
        // the decoder lets through is within the bounds the encoder keeps.
        if (const auto owner = shim::decode_owner(frame.payload)) {
            check(owner->processes.size() <= shim::kMaxChain, "an answer's chain is within the bound");
            for (const auto& process : owner->processes)
                check(process.pid != 0 && process.command.size() <= shim::kMaxCommandBytes,
                      "a process has a pid and a command within the bound");
            again = shim::encode_owner(*owner);
        }
        break;
    case shim::FrameType::input:
    case shim::FrameType::input_eof:
    case shim::FrameType::redraw:
    case shim::FrameType::exit_ack:
        break;
    }
    if (again.empty()) return;
    std::string original;
    shim::append_frame(original, frame.type, frame.payload);
    check(again == original, "a decoded payload encodes back to the same frame", original);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes = handler::fuzz::as_text(data, size);
    const Decoded whole = decode({bytes});
    const Decoded split = decode(handler::fuzz::pieces_of(bytes));
    check(whole.failed == split.failed && whole.frames.size() == split.frames.size(),
          "the frames are the same however the bytes are split");
    std::size_t read = 0;
    for (std::size_t i = 0; i < whole.frames.size(); ++i) {
        const auto& frame = whole.frames[i];
        check(frame.type == split.frames[i].type && frame.payload == split.frames[i].payload,
              "each frame is the same however the bytes are split");
        check(shim::FrameDecoder::known_type(static_cast<std::uint8_t>(frame.type)), "a frame's type is known");
        check(frame.payload.size() <= shim::kMaxPayload, "a frame's payload is within the limit");
        read += shim::kHeaderSize + frame.payload.size();
        check_round_trip(frame);
    }
    if (!whole.failed) {
        check(whole.buffered == split.buffered, "the same bytes wait however the input is split");
        check(read + whole.buffered == bytes.size(), "the frames and what waits are the whole input");
    }
    return 0;
}
