// Creating an output file safely (tern pack's GGUF, the Writer's only
// client today). Output is written to a temporary beside the target and
// renamed into place at the end, so no reader ever sees half a file.
#pragma once
#include <string>

namespace tern {

// Refuses a target that exists and is not a regular file: rename() would
// replace a device node, a FIFO, a socket or the symbolic link itself.
// Throws file_error "path: is a FIFO; ...".
void check_output_path(const std::string& path);

// A new temporary "<path>.tmp-XXXXXX" in the target's directory, made by
// mkstemp (O_CREAT | O_EXCL: a name planted in advance, symlink or not, is
// never opened), with the permissions a plain create would give. It is
// registered for removal by the signal handlers below until
// forget_temporary().
struct Temporary {
  int fd = -1;
  std::string path;
};
Temporary create_temporary(const std::string& target);
void forget_temporary(const std::string& temporary_path);

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGXFSZ that remove
// every registered temporary, then die of the same signal. Called once by
// main(); a library never installs signal handlers on its own. SIGKILL
// cannot be caught: it leaves the "<path>.tmp-XXXXXX" file behind.
void remove_temporaries_on_signals();

}  // namespace tern
