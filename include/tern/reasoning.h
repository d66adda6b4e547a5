// A reply's reasoning apart from its answer. Reasoning models of the Qwen3
// kind open a reply with "<think>\n...\n</think>\n\n" and then answer; the
// chat template drops that block from the history itself, so what is left
// to the engine is showing it or not. The splitter works on streamed text:
// it holds back only what could still be the start of a tag.
#pragma once
#include <string>
#include <string_view>

#include "tern/generate.h"

namespace tern {

class ReasoningSplitter {
 public:
  // answer and reasoning receive the text as soon as it is certain which of
  // the two it belongs to; either may be an empty function (dropped).
  ReasoningSplitter(TextSink answer, TextSink reasoning);

  void feed(std::string_view piece);
  // The end of the reply: whatever was held goes out where it belongs.
  void finish();
  // The reply opened a <think> block that has not been closed.
  bool in_reasoning() const { return state_ == State::Reasoning; }

 private:
  enum class State { Start, Reasoning, AfterReasoning, Answer };
  void emit(const TextSink& sink, std::string_view text) const;

  TextSink answer_, reasoning_;
  State state_ = State::Start;
  std::string held_;  // text that may still be part of a tag
};

}  // namespace tern
