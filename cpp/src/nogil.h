// MXNet calls that must not be made with the GIL held.
#pragma once
#include <Python.h>

namespace minpy {

// Building or running a graph or an op (MXSymbolCreateFromJSON, MXCreateCachedOpEx,
// MXSymbolCreateAtomicSymbol, MXInvokeCachedOpEx, MXImperativeInvokeEx, MXAutogradBackwardEx)
// takes MXNet's CustomOperator lock when a Custom op is involved, and MXNet's custom-op
// worker thread holds that lock while it waits for the GIL (freeing a CustomOp's Python state).
// Made with the GIL held, such a call deadlocks: seen as a CI run that hung in
// tests/test_callbacks.py (a hybridized block calling a Custom op inside jit()). A call that
// waits for MXNet's engine (MXNDArraySyncCopyFromCPU) waits for that worker too.
template <class Call>
int without_gil(Call&& call) {
  if (!PyGILState_Check()) return call();  // already released by a caller, or an MXNet thread
  struct Reacquire {
    PyThreadState* saved;
    ~Reacquire() { PyEval_RestoreThread(saved); }
  } reacquire{PyEval_SaveThread()};
  return call();
}

}  // namespace minpy
