// MXNet calls that must not be made with the GIL held.
#pragma once
#include <Python.h>

namespace minpy {

// Building a graph (MXSymbolCreateFromJSON, MXCreateCachedOpEx, MXSymbolCreateAtomicSymbol)
// parses a Custom op's attributes under MXNet's CustomOperator lock, and MXNet's custom-op
// worker thread holds that lock while it waits for the GIL (freeing a CustomOp's Python state).
// Made with the GIL held, such a call deadlocks: seen as a CI run that hung in
// tests/test_callbacks.py (a hybridized block calling a Custom op inside jit()).
template <class Call>
int without_gil(Call&& call) {
  if (!PyGILState_Check()) return call();
  PyThreadState* saved = PyEval_SaveThread();
  int rc = call();
  PyEval_RestoreThread(saved);
  return rc;
}

}  // namespace minpy
