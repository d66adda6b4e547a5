// Text from a file on its way to a terminal. A GGUF's general.name, an
// architecture string or a tensor name can hold escape sequences that
// retitle, recolour or rewrite the user's terminal; printed through
// printable(), every C0 control, DEL and C1 control (U+0080-U+009F, which
// some terminals obey as ESC [) is shown as \xHH or \u00HH instead.
#pragma once
#include <string>
#include <string_view>

namespace tern {

// keep_layout: leave tab, newline and carriage return as they are (texts
// whose line breaks are content); otherwise they are escaped too.
std::string printable(std::string_view s, bool keep_layout = false);

}  // namespace tern
