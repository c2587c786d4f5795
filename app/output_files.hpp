// The output files of one command, written all together or not at all.
//
// Every output path a subcommand takes is claimed before any work: a path equal to an input or to
// another output is refused (by file identity where the file exists, so a symlink, a hard link or
// ./x against x is caught; by the normalised path otherwise), and the folder is probed by creating
// and removing a temporary in it, so a missing folder, a permission or a name too long fails at
// once. The content is then staged into a temporary beside its target as the command produces it,
// and main renames every temporary into place only once the command has succeeded (exit 0 or 1)
// and stdout has been flushed without error; on a failure, an interrupt or an exception they are
// removed. A symlink is written through: its target is replaced atomically in the target's folder
// and the link stays. A path that exists and is not a regular file (/dev/null, a FIFO, /dev/stdout)
// is written into at commit, never replaced. "-" and the empty path mean stdout, which is not staged.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mlaplan::cli {

class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet() { discard(); }

  // An input the command reads (`what`: "the scenario file", "--lengths"): outputs may not be it.
  // A path that does not exist is left to the reader to refuse.
  void claim_input(const std::string& path, const std::string& what);
  // An output file of option `option` ("-o", "--trace"): refused (InputError) when it is an input
  // or another output, a folder, or cannot be created in its folder. Stdout ("-", or -o's "") may
  // take one output only: a second option sending to it is refused.
  void claim_output(const std::string& path, const std::string& option);
  // Writes `content` for `path` into its temporary (claiming it first if nobody did); a device or
  // FIFO keeps the content until commit. I/O faults throw DeviceError (exit 3), path problems
  // InputError (exit 2).
  void stage(const std::string& path, const std::string& content);
  // Writes the devices, then renames every temporary into place; throws as stage does.
  void commit();
  // Removes the temporaries and forgets everything claimed.
  void discard() noexcept;

 private:
  struct Identity {
    bool exists = false;
    bool shared = false;  // not a regular file (/dev/null, a terminal, a FIFO): takes any number of outputs
    dev_t dev = 0;
    ino_t ino = 0;
    std::string normal;  // absolute, symlinks of the existing part resolved, lexically normal
  };
  struct Output {
    std::string path, option;
    std::string target;  // where the bytes go: the path with any symlinks on it followed
    Identity id;
    bool special = false;  // an existing non-regular file: written into at commit
    std::string temp;      // the staged temporary, once written
    std::string content;   // a special output's bytes, until commit
    bool staged = false;
  };
  struct Input {
    std::string path, what;
    Identity id;
  };

  Output& find_or_claim(const std::string& path);

  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::string stdout_option_;    // the option whose output goes to stdout ("-", or -o left out), if any
  bool stdout_default_ = false;  // it is -o, left out
};

// The process's set: the subcommands claim and stage into it, main commits or discards it.
OutputSet& outputs();

// Writes `content` to `path` at once (atomically, through a symlink, as the set does); for side
// outputs that are kept whatever the command's outcome, like verify's reproducers.
void write_file_now(const std::string& path, const std::string& content, const std::string& option);

// Before any work: `dir`, the folder of option's side outputs (verify's --repro-dir), must be a
// folder or a path one can be made at (it is made when first needed), else what goes there would be
// lost with only notes. The nearest part of the path that exists decides: a regular file there (f,
// or f/sub) can hold nothing.
void require_output_folder(const std::string& dir, const std::string& option);

// Writes to stdout and flushes; a failure (a full disk, a closed stream) throws DeviceError naming
// "stdout".
void write_stdout(const std::string& content);
// Flushes std::cout and stdout; throws DeviceError naming "stdout" if anything written to them
// since the start was lost.
void check_stdout();
// The same as a message ("stdout: writing the output failed: CAUSE"), empty when all is well.
std::string stdout_problem();
// Where stdin, stdout or stderr is closed (`>&-`), puts a read-only /dev/null in its place, so a
// file opened later cannot take its descriptor (and receive what was meant for stdout), while
// writes to it still fail (EBADF) and are reported.
void guard_standard_streams();

}  // namespace mlaplan::cli
