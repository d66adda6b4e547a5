#include "tern/reasoning.h"

#include <utility>

namespace tern {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

// The length of the longest suffix of `s` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

ReasoningSplitter::ReasoningSplitter(TextSink answer, TextSink reasoning)
    : answer_(std::move(answer)), reasoning_(std::move(reasoning)) {}

void ReasoningSplitter::emit(const TextSink& sink, std::string_view text) const {
  if (sink && !text.empty()) sink(std::string(text));
}

void ReasoningSplitter::feed(std::string_view piece) {
  held_.append(piece);
  while (!held_.empty()) {
    std::string_view h = held_;
    switch (state_) {
      case State::Start: {
        // Reasoning only where the reply opens with the tag (after blanks).
        size_t b = 0;
        while (b < h.size() && is_space(h[b])) ++b;
        const std::string_view rest = h.substr(b);
        if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return;  // undecided
        if (rest.substr(0, kOpen.size()) == kOpen) {
          held_.erase(0, b + kOpen.size());
          state_ = State::Reasoning;
        } else {
          state_ = State::Answer;
        }
        break;
      }
      case State::Reasoning: {
        const size_t at = h.find(kClose);
        if (at == std::string_view::npos) {
          const size_t keep = partial_tag(h, kClose);
          emit(reasoning_, h.substr(0, h.size() - keep));
          held_.erase(0, h.size() - keep);
          return;
        }
        emit(reasoning_, h.substr(0, at));
        held_.erase(0, at + kClose.size());
        state_ = State::AfterReasoning;
        break;
      }
      case State::AfterReasoning: {
        // The template writes "</think>\n\n" before the answer; the blank
        // lines belong to neither part.
        size_t b = 0;
        while (b < h.size() && is_space(h[b])) ++b;
        held_.erase(0, b);
        if (held_.empty()) return;
        state_ = State::Answer;
        break;
      }
      case State::Answer:
        emit(answer_, h);
        held_.clear();
        return;
    }
  }
}

void ReasoningSplitter::finish() {
  if (state_ == State::Reasoning) emit(reasoning_, held_);
  else if (state_ != State::AfterReasoning) emit(answer_, held_);
  held_.clear();
}

}  // namespace tern
