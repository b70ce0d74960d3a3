// Where in the user's program an op was recorded or a flush happened.
//
// A location is the innermost Python frame outside mxnet and minpy_jit,
// stored as (code object, instruction offset) and turned into "file:line"
// only when someone prints it. Code compiled from a string counts as the
// user's unless it runs in an mxnet module (MXNet's generated op functions):
// `python -c` gives "<string>:3", the interactive prompt "<stdin>:2", a
// notebook cell its IPython name ("In[4]:2", via set_namer).
#pragma once
#include <Python.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace minpy {

class SourceTable {
 public:
  // Package directories whose frames are skipped (mxnet's, ours).
  void set_library_dirs(std::vector<std::string> dirs) { lib_dirs_ = std::move(dirs); }
  int capture();  // location id of the current user frame, -1 if none
  std::string str(int loc) const;
  void set_namer(PyObject* fn);  // fn(filename) -> a notebook cell's name, or None
  void clear();

 private:
  bool is_library(PyCodeObject* code, PyFrameObject* frame);
  PyObject* namer_ = nullptr;
  std::vector<std::string> lib_dirs_;
  std::unordered_map<PyCodeObject*, bool> library_code_;  // holds a reference to each key
  std::unordered_map<uint64_t, int> ids_;
  std::vector<std::pair<PyCodeObject*, int>> locs_;       // (code, lasti); code referenced
};

}  // namespace minpy
